import { z } from 'zod';

const contentPart = z.looseObject({ type: z.string(), text: z.string().optional() });
const message = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), z.array(contentPart), z.null()]).optional(),
  name: z.string().optional(),
  tool_calls: z.array(z.unknown()).optional(),
  tool_call_id: z.string().optional(),
});

const tool = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.unknown().optional(),
  }),
});

const common = {
  model: z.string({ error: 'you must provide a model parameter' }),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  max_tokens: z.number().int().min(1).nullish(),
  n: z.number().int().min(1).max(128).nullish(),
  seed: z.number().int().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  /** vLLM extension: generate exactly max_tokens. */
  ignore_eos: z.boolean().nullish(),
};

/** OpenAI Responses API request (text in/out; no tools, no stored state). */
export const responsesRequestSchema = z.looseObject({
  model: z.string({ error: 'you must provide a model parameter' }),
  input: z.union([
    z.string(),
    z.array(
      z.looseObject({
        role: z.enum(['system', 'developer', 'user', 'assistant']),
        content: z.union([z.string(), z.array(contentPart)]),
      }),
    ),
  ]),
  instructions: z.string().nullish(),
  max_output_tokens: z.number().int().min(1).nullish(),
  stream: z.boolean().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  seed: z.number().int().nullish(),
});

export const chatRequestSchema = z.looseObject({
  ...common,
  messages: z.array(message).min(1, "'messages' must contain at least one message"),
  max_completion_tokens: z.number().int().min(1).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  tools: z.array(tool).nullish(),
  tool_choice: z
    .union([
      z.enum(['none', 'auto', 'required']),
      z.looseObject({ type: z.literal('function'), function: z.object({ name: z.string() }) }),
    ])
    .nullish(),
});
export type ChatRequest = z.infer<typeof chatRequestSchema>;

export const completionRequestSchema = z.looseObject({
  ...common,
  prompt: z.union([z.string(), z.array(z.string()).length(1), z.array(z.number().int()).min(1)]),
  logprobs: z.number().int().min(0).max(5).nullish(),
  echo: z.boolean().nullish(),
});
export type CompletionRequest = z.infer<typeof completionRequestSchema>;

export const embeddingRequestSchema = z.looseObject({
  model: z.string({ error: 'you must provide a model parameter' }),
  input: z.union([
    z.string(),
    z.array(z.string()).min(1),
    z.array(z.number().int()).min(1),
    z.array(z.array(z.number().int()).min(1)).min(1),
  ]),
  encoding_format: z.enum(['float', 'base64']).nullish(),
  dimensions: z.number().int().min(1).max(4096).nullish(),
});
export type EmbeddingRequest = z.infer<typeof embeddingRequestSchema>;
