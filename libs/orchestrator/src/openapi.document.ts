import { z } from 'zod';
import {
  CampaignSpecSchema,
  RunProgressSchema,
  RunSummarySchema,
  RunStatusSchema,
  RunTriggerSchema,
} from '@fathom/contracts';
import { AlertRuleInputSchema, AlertmanagerPayloadSchema } from '@fathom/contracts';
import { ScheduleInputSchema } from '@fathom/contracts';

/**
 * The REST API as an OpenAPI 3.1 document, built from the same zod schemas that validate the
 * requests (z.toJSONSchema), so the document cannot drift from what the server accepts.
 * Extra paths (e.g. shadow testing's) are merged in by their owners.
 */
export type OpenApiPaths = Record<string, Record<string, unknown>>;

const json = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });

export const StoredRunSchema = z.object({
  id: z.string(),
  campaignId: z.string(),
  status: RunStatusSchema,
  trigger: RunTriggerSchema,
  parentRunId: z.string().nullable(),
  reason: z.string().nullable(),
  createdAt: z.number(),
  startedAt: z.number().nullable(),
  endedAt: z.number().nullable(),
  summary: RunSummarySchema.nullable(),
  /** When the run's plan went to the load-generators; null while it waits for the bus. */
  planPublishedAt: z.number().nullable(),
});

const ErrorSchema = z.object({
  statusCode: z.number(),
  message: z.string(),
  issues: z.array(z.object({ field: z.string(), message: z.string() })).optional(),
});

const body = (ref: string) => ({
  required: true,
  content: { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } },
});
const reply = (description: string, ref?: string) => ({
  description,
  ...(ref ? { content: { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } } } : {}),
});
const idParam = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string' } });
const bearer = [{ apiToken: [] }];
const errors = {
  '400': reply('invalid body: every bad field is named', 'Error'),
  '401': reply('bearer token missing or wrong', 'Error'),
};

export const ORCHESTRATOR_PATHS: OpenApiPaths = {
  '/v1/campaigns': {
    post: {
      summary: 'Create a campaign and start its first run',
      security: bearer,
      requestBody: body('CampaignSpec'),
      responses: { '201': reply('campaignId, runId, links.run'), ...errors },
    },
  },
  '/v1/campaigns/{id}': {
    get: {
      summary:
        'A campaign with its newest 100 runs (links.runs lists them all, links.moreRuns the next page)',
      parameters: [idParam('id')],
      responses: { '200': reply('the campaign'), '404': reply('no such campaign', 'Error') },
    },
  },
  '/v1/runs': {
    get: {
      summary: 'Runs, newest first, one page at a time',
      parameters: [
        { name: 'campaignId', in: 'query', schema: { type: 'string' } },
        { name: 'status', in: 'query', schema: json(RunStatusSchema) },
        {
          name: 'limit',
          in: 'query',
          description: 'runs per page',
          schema: { type: 'integer', minimum: 1, maximum: 500, default: 100 },
        },
        {
          name: 'cursor',
          in: 'query',
          description: 'the X-Next-Cursor of the previous page',
          schema: { type: 'string' },
        },
      ],
      responses: {
        '400': reply('a bad limit or cursor', 'Error'),
        '200': {
          description: 'one page of runs; when more follow, X-Next-Cursor and Link (rel="next") say where',
          headers: {
            'X-Next-Cursor': { description: 'cursor of the next page', schema: { type: 'string' } },
            Link: { description: 'RFC 8288 link to the next page', schema: { type: 'string' } },
          },
          content: {
            'application/json': { schema: { type: 'array', items: { $ref: '#/components/schemas/Run' } } },
          },
        },
      },
    },
  },
  '/v1/runs/{id}': {
    get: {
      summary: 'A run: state, trigger, reason, summary',
      parameters: [idParam('id')],
      responses: { '200': reply('the run', 'Run'), '404': reply('no such run', 'Error') },
    },
  },
  '/v1/runs/{id}/report': {
    get: {
      summary: "The run's latest report document",
      parameters: [idParam('id')],
      responses: { '200': reply('the report'), '404': reply('no report yet', 'Error') },
    },
  },
  '/v1/runs/{id}/report.html': {
    get: {
      summary:
        "The run's latest report as one self-contained HTML page (charts and data inlined, no network)",
      parameters: [idParam('id')],
      responses: {
        '200': { description: 'the page', content: { 'text/html': { schema: { type: 'string' } } } },
        '404': reply('no report yet', 'Error'),
      },
    },
  },
  '/v1/runs/{id}/progress': {
    get: {
      summary:
        'A run as its telemetry stands: elapsed and remaining time, requests/s, P50/P99 of E2E and TTFT, errors, tier, open breakers, validity so far',
      parameters: [idParam('id')],
      responses: { '200': reply('the progress', 'RunProgress'), '404': reply('no such run', 'Error') },
    },
  },
  '/v1/runs/{id}/abort': {
    post: {
      summary: 'Abort a run: its load stops within one second (requests in flight are cancelled)',
      security: bearer,
      parameters: [idParam('id')],
      responses: {
        '202': reply('{id, aborted, status}'),
        '401': errors['401'],
        '404': reply('no such run', 'Error'),
      },
    },
  },
  '/v1/hooks/alertmanager': {
    post: {
      summary:
        'Alertmanager webhook (payload version 4): firing alerts start the campaigns of matching rules, once per episode. One open run per campaign: an alert whose campaign already has a run pending or running starts nothing and is coalesced into that run (listed under `coalesced`). A resolved alert aborts an alert-started run once no alert holding it is still firing; runs started otherwise are never aborted by alerts',
      security: [{ alertWebhookSecret: [] }],
      requestBody: body('AlertmanagerPayload'),
      responses: {
        '200': reply(
          'runs started, alerts coalesced into open runs, duplicates, runs aborted, unmatched alerts',
        ),
        ...errors,
        '503': reply('FATHOM_ALERT_WEBHOOK_SECRET not set', 'Error'),
      },
    },
  },
  '/v1/alert-rules': {
    post: {
      summary: 'Map alert labels to a campaign',
      security: bearer,
      requestBody: body('AlertRuleInput'),
      responses: { '201': reply('the stored rule'), ...errors },
    },
    get: { summary: 'Alert rules', responses: { '200': reply('rules') } },
  },
  '/v1/alert-rules/{id}': {
    delete: {
      summary: 'Delete a rule that never fired',
      security: bearer,
      parameters: [idParam('id')],
      responses: {
        '204': reply('deleted'),
        '404': reply('no such rule', 'Error'),
        '409': reply('rule already fired', 'Error'),
      },
    },
  },
  '/v1/schedules': {
    post: {
      summary: 'Schedule a stored campaign (interval or always-on); a campaign never overlaps itself',
      security: bearer,
      requestBody: body('ScheduleInput'),
      responses: { '201': reply('the stored schedule'), ...errors },
    },
    get: { summary: 'Schedules', responses: { '200': reply('schedules') } },
  },
  '/v1/schedules/{id}': {
    get: {
      summary: 'A schedule',
      parameters: [idParam('id')],
      responses: { '200': reply('the schedule'), '404': reply('no such schedule', 'Error') },
    },
    delete: {
      summary: 'Disable a schedule',
      security: bearer,
      parameters: [idParam('id')],
      responses: { '204': reply('disabled'), '404': reply('no such schedule', 'Error') },
    },
  },
};

export function buildOpenApiDocument(
  extraPaths: OpenApiPaths = {},
  extraSchemas: Record<string, z.ZodType> = {},
): Record<string, unknown> {
  const schemas: Record<string, z.ZodType> = {
    CampaignSpec: CampaignSpecSchema,
    Run: StoredRunSchema,
    RunProgress: RunProgressSchema,
    Error: ErrorSchema,
    AlertmanagerPayload: AlertmanagerPayloadSchema,
    AlertRuleInput: AlertRuleInputSchema,
    ScheduleInput: ScheduleInputSchema,
    ...extraSchemas,
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Fathom orchestrator API',
      version: '1',
      description:
        'Campaigns, runs, schedules, alert-driven runs and shadow testing. Mutating calls need `Authorization: Bearer <FATHOM_API_TOKEN>` when that token is set.',
    },
    paths: { ...ORCHESTRATOR_PATHS, ...extraPaths },
    components: {
      securitySchemes: {
        apiToken: { type: 'http', scheme: 'bearer', description: 'FATHOM_API_TOKEN' },
        alertWebhookSecret: { type: 'http', scheme: 'bearer', description: 'FATHOM_ALERT_WEBHOOK_SECRET' },
      },
      schemas: Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, json(schema)])),
    },
  };
}
