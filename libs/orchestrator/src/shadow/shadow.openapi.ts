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
    '/v1/shadow-campaigns/{id}/report': {
      get: {
        summary:
          "The report over time: a live campaign's caps, shed counts, candidate breaker, the analyzer's breaker on the candidate, tier and rolling windows (per window and per hour; latency, TTFT, errors, similarity, hallucination risk, tool calls and arguments, schema, refusals against the noise floor); otherwise the final report. `format=html`: one self-contained page",
        parameters: [
          { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
          {
            name: 'format',
            in: 'query',
            required: false,
            schema: { type: 'string', enum: ['json', 'html'] },
          },
        ],
        responses: {
          '200': { description: 'the report (JSON, or text/html with format=html)' },
          '400': { description: 'format is neither json nor html' },
          '404': { description: 'no such campaign' },
        },
      },
    },
    '/v1/shadow-campaigns/{id}/stop': {
      post: {
        summary:
          'Kill switch of a live campaign: on the orchestrator running it, no replay starts once this answered and those in flight are aborted; asked of another replica, the campaign ends at once and the stop, announced on fathom.shadow.control.v1, stops its runner within a second (at its next lease pass should the announcement be lost)',
        security: [{ apiToken: [] }],
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          '200': { description: 'stopped (status completed, reason stopped)' },
          '404': { description: 'no running live campaign' },
          '409': { description: 'the campaign is not live (it ends by itself)' },
        },
      },
    },
    '/v1/shadow-campaigns/{id}/mirror': {
      post: {
        summary:
          "Mirror receiver: a copy of a production chat request (NGINX mirror, Envoy request_mirror_policies, fathom shadow gateway); answered 202 at once, replayed later within the campaign's caps by whichever orchestrator runs the campaign (any replica accepts it; a live campaign outlives orchestrator restarts). Header x-fathom-intent labels its intent",
        security: [{ apiToken: [] }],
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } },
        responses: {
          '202': { description: 'accepted' },
          '400': { description: 'not a chat completion request' },
          '404': { description: 'no running live campaign' },
        },
      },
    },
    '/v1/shadow-campaigns/{id}/mirror/batch': {
      post: {
        summary:
          'Mirror receiver for several copies in one request (the shadow gateway sends each slice of copies so): {"copies": [{"body": <chat request>, "intent": "..."}]}, at most 256; each copy is taken as /mirror takes one',
        security: [{ apiToken: [] }],
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['copies'],
                properties: {
                  copies: {
                    type: 'array',
                    minItems: 1,
                    maxItems: 256,
                    items: {
                      type: 'object',
                      required: ['body'],
                      properties: { body: { type: 'object' }, intent: { type: 'string', nullable: true } },
                    },
                  },
                },
              },
            },
          },
        },
        responses: {
          '202': {
            description:
              '{accepted, invalid}: copies handed on, and copies that were not chat completion requests',
          },
          '400': { description: 'not a mirror batch (the envelope)' },
          '404': { description: 'no running live campaign' },
        },
      },
    },
  },
};
