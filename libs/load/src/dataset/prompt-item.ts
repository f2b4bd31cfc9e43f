/** One request's input, ready to send. `inputTokensClient` is gpt-tokenizer's count of the text sent. */
export interface PromptItem {
  messages: { role: 'system' | 'user' | 'assistant'; content: string }[];
  /** The same input flattened (completions and embeddings send this). */
  text: string;
  inputTokensClient: number;
  /** Output length asked for; the scenario's maxTokens when absent. */
  maxTokens?: number;
  /** Intent-path replay: the steps (by name) of an `http` scenario this request runs. */
  intentPath?: string[];
}
