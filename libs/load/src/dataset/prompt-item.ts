/** An OpenAI chat content part other than text; client-side counts leave them out. */
export type MediaPart =
  | { type: 'image_url'; image_url: { url: string } }
  | { type: 'input_audio'; input_audio: { data: string; format: 'wav' | 'mp3' } };

/** One request's input, ready to send. `inputTokensClient` is gpt-tokenizer's count of the text sent. */
export interface PromptItem {
  messages: {
    role: 'system' | 'user' | 'assistant';
    content: string;
    /** Multimodal parts sent after the text (`image_url`, `input_audio`), passed through as given. */
    parts?: MediaPart[];
  }[];
  /** The same input flattened (completions and embeddings send this). */
  text: string;
  inputTokensClient: number;
  /** Output length asked for; the scenario's maxTokens when absent. */
  maxTokens?: number;
  /** Intent-path replay: the steps (by name) of an `http` scenario this request runs. */
  intentPath?: string[];
}
