import type { OpenApiExtension } from '../docs.controller';
import { ShadowCampaignInputSchema } from '@fathom/contracts';

export const SHADOW_OPENAPI: OpenApiExtension = {
  schemas: { ShadowCampaignInput: ShadowCampaignInputSchema },
  paths: {
    '/v1/shadow-campaigns': {
      post: {
        summary:
          'Start a shadow campaign (requests inline, from a JSONL file, or from fathom.shadow.request.v1); requests are redacted before anything is stored or sent',
        security: [{ apiToken: [] }],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/ShadowCampaignInput' } } },
        },
        responses: {
          '201': { description: 'id, status running' },
          '400': { description: 'invalid body: every bad field is named' },
          '401': { description: 'bearer token missing or wrong' },
        },
      },
    },
    '/v1/shadow-campaigns/{id}': {
      get: {
        summary:
          'Status and report: per endpoint and intent, each metric with its noise floor (primary vs secondary) and the candidate difference; `differences` lists only those beyond the floor',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          '200': { description: 'the shadow campaign' },
          '404': { description: 'no such campaign' },
        },
      },
    },
    '/v1/shadow-campaigns/{id}/samples': {
      get: {
        summary: 'The stored (redacted) requests with the three observations each',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: { '200': { description: 'samples' }, '404': { description: 'no such campaign' } },
      },
    },
  },
};
