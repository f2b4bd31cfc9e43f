import {
  ChatStreamAssembler,
  type ChatStreamAssemblerOptions,
  type ParsedChatStream,
} from './chat-stream.assembler';
import { SseDecoder } from './sse.decoder';

/**
 * Parses a whole recorded response: an SSE body (`data:` lines), or, when the text holds no
 * `data:` field and is one JSON object, a non-streamed `chat.completion` / `text_completion`.
 * Throws `StreamParseError` like `ChatStreamAssembler.accept`.
 */
export function parseChatStream(text: string, options: ChatStreamAssemblerOptions = {}): ParsedChatStream {
  const assembler = new ChatStreamAssembler(options);
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (looksLikeJsonDocument(body)) {
    assembler.accept(body);
    return assembler.result();
  }
  const decoder = new SseDecoder();
  for (const payload of decoder.push(body)) assembler.accept(payload);
  for (const payload of decoder.end()) assembler.accept(payload);
  return assembler.result();
}

function looksLikeJsonDocument(text: string): boolean {
  const trimmed = text.trimStart();
  return trimmed.startsWith('{') && !/^data:/m.test(text);
}
