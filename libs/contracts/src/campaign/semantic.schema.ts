import { z } from 'zod';

/**
 * Labels a prompt with an intent: the first rule whose `pattern` matches the prompt as sent wins;
 * a prompt no rule matches has no intent and counts only towards response drift. (Datasets carry
 * no intent field: `@fathom/load` reads only the prompt text of a JSONL line or a conversation.)
 */
export const IntentRuleSchema = z
  .object({
    label: z.string().min(1).max(100),
    /** A JavaScript regular expression, e.g. `refund|money back`. */
    pattern: z.string().min(1).max(1000),
    /** RegExp flags; default case-insensitive. */
    flags: z
      .string()
      .regex(/^[imsu]*$/, 'flags may only be i, m, s, u')
      .default('i'),
  })
  .strict()
  .superRefine((rule, ctx) => {
    try {
      new RegExp(rule.pattern, rule.flags);
    } catch (error) {
      ctx.addIssue({
        code: 'custom',
        message: `not a valid regular expression: ${(error as Error).message}`,
        path: ['pattern'],
      });
    }
  });
export type IntentRule = z.infer<typeof IntentRuleSchema>;

/**
 * Response drift and intent accuracy against a baseline run of the same scenario (spec, monitoring
 * matrix: intent-recognition accuracy drop vs baseline, healthy < 5 %). The semantic-monitor
 * embeds a sample of the run's responses (its adaptive budget), keyed by a fingerprint of the
 * prompt; it compares them with the baseline's responses to the same prompts and classifies them
 * with an intent head trained on the baseline's embeddings.
 */
export const SemanticBaselineSpecSchema = z
  .object({
    /**
     * The baseline this run is judged against: `latest` is the newest baseline an earlier run of
     * this campaign recorded (none yet: the run is only recorded); `{ runId }` pins the one a
     * given run recorded (of any campaign: a candidate endpoint against production's run);
     * `none` compares nothing.
     */
    compareWith: z
      .union([z.enum(['latest', 'none']), z.object({ runId: z.string().min(1) }).strict()])
      .default('latest'),
    /**
     * Store this run's sampled responses as a baseline once its records are all in. A run that
     * drifted from its own baseline or lost intent accuracy is never recorded, so `latest` cannot
     * creep away step by step.
     */
    record: z.boolean().default(true),
    /** Cap on stored responses (about 2.8 kB each at 512 dimensions); at most 4 per prompt. */
    maxItems: z.number().int().min(2).max(2048).default(256),
    /**
     * A response whose cosine to the baseline's response to the same prompt is below this has
     * drifted. 0.42: the spec's semantic-consistency quality gate (cross-modal test data factory).
     */
    minCosine: z.number().min(-1).max(1).default(0.42),
    /** Share of drifted responses at or above which the run is flagged (5 %: the matrix's intent tolerance). */
    maxDriftedShare: z.number().min(0).max(1).default(0.05),
    /** Compared responses needed before a verdict is published. */
    minPairs: z.number().int().positive().max(10000).default(5),
    /**
     * Intent of each prompt, by rules on its text. Absent: every distinct prompt is its own
     * intent, and accuracy says whether a response is still recognisably the answer to its prompt.
     */
    intents: z.array(IntentRuleSchema).min(1).max(256).optional(),
    /**
     * Your own intent classifier instead of the head trained on the baseline: an ONNX file read by
     * the semantic-monitor, one float input [batch, D] (D = the embedder's dimensions, inputs are
     * L2-normalised), first output [batch, labels] probabilities or logits in `labels` order.
     */
    classifier: z
      .object({ path: z.string().min(1), labels: z.array(z.string().min(1)).min(2).max(4096) })
      .strict()
      .optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    if (b.classifier && !b.intents)
      ctx.addIssue({
        code: 'custom',
        message: 'a classifier needs intents: rules that give each prompt its true label',
        path: ['intents'],
      });
    if (b.classifier) {
      const labels = new Set(b.classifier.labels);
      if (labels.size !== b.classifier.labels.length)
        ctx.addIssue({ code: 'custom', message: 'duplicate label', path: ['classifier', 'labels'] });
      b.intents?.forEach((rule, i) => {
        if (!labels.has(rule.label))
          ctx.addIssue({
            code: 'custom',
            message: `intent ${rule.label} is not among the classifier's labels`,
            path: ['intents', i, 'label'],
          });
      });
    }
  });
export type SemanticBaselineSpec = z.infer<typeof SemanticBaselineSpecSchema>;

export const SemanticSpecSchema = z.object({ baseline: SemanticBaselineSpecSchema.optional() }).strict();
export type SemanticSpec = z.infer<typeof SemanticSpecSchema>;
