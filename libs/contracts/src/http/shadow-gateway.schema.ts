import { z } from 'zod';

/** `POST /mirroring` on the shadow gateway's admin listener: the kill switch over HTTP. */
export const ShadowMirroringSwitchSchema = z.object({ enabled: z.boolean() }).strict();
export type ShadowMirroringSwitch = z.infer<typeof ShadowMirroringSwitchSchema>;

/** Copies one `POST /v1/shadow-campaigns/:id/mirror/batch` may carry. */
export const MIRROR_BATCH_MAX_COPIES = 256;

/**
 * `POST /v1/shadow-campaigns/:id/mirror/batch`: several mirrored copies in one request (the
 * shadow gateway's copy thread sends those of one slice together). Each copy is what
 * `POST .../mirror` takes as its body, with the `x-fathom-intent` header as `intent`.
 */
export const MirrorBatchSchema = z
  .object({
    copies: z
      .array(
        z
          .object({
            body: z.unknown(),
            intent: z.string().max(512).nullable().optional(),
          })
          .strict(),
      )
      .min(1)
      .max(MIRROR_BATCH_MAX_COPIES),
  })
  .strict();
export type MirrorBatch = z.infer<typeof MirrorBatchSchema>;
