import { z } from 'zod';

/** `POST /mirroring` on the shadow gateway's admin listener: the kill switch over HTTP. */
export const ShadowMirroringSwitchSchema = z.object({ enabled: z.boolean() }).strict();
export type ShadowMirroringSwitch = z.infer<typeof ShadowMirroringSwitchSchema>;
