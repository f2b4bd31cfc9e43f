import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { z } from 'zod';

export interface FieldIssue {
  /** Dotted path of the offending field, e.g. `load.concurrency`; `(root)` for the body itself. */
  field: string;
  message: string;
}

/**
 * Input that cannot be used as written; every issue names its field. Thrown by services and
 * parsers, answered with a 400 `{statusCode, message, issues}` by `FieldValidationFilter`.
 */
export class FieldValidationError extends Error {
  constructor(
    what: string,
    readonly issues: FieldIssue[],
  ) {
    super(`invalid ${what}: ${issues.map((i) => `${i.field}: ${i.message}`).join('; ')}`);
  }
}

/** zod issues as field issues; unknown keys are named one by one (zod reports them on the parent). */
export function fieldIssues(error: z.ZodError): FieldIssue[] {
  return error.issues.flatMap((issue) => {
    const path = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((k) => ({ field: [...path, k].join('.'), message: 'unknown field' }));
    }
    return [{ field: path.length ? path.join('.') : '(root)', message: issue.message }];
  });
}

/** Parses `input` or throws a FieldValidationError naming each bad field. */
export function parseFields<S extends z.ZodType>(schema: S, input: unknown, what: string): z.infer<S> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new FieldValidationError(what, fieldIssues(parsed.error));
  return parsed.data;
}

interface HttpResponse {
  status(code: number): { json(body: unknown): unknown };
}

@Catch(FieldValidationError)
export class FieldValidationFilter implements ExceptionFilter {
  catch(error: FieldValidationError, host: ArgumentsHost): void {
    host
      .switchToHttp()
      .getResponse<HttpResponse>()
      .status(400)
      .json({ statusCode: 400, message: error.message, issues: error.issues });
  }
}
