/**
 * Why a line is not JSON, without quoting it: V8's messages carry the text around the error
 * (`Unexpected token 'r', "root:$6$..." is not valid JSON`), and a dataset path pointed at a
 * file it should not read must not echo that file back in a run's reason.
 */
export function jsonErrorReason(error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  const position = /position (\d+)/.exec(message);
  if (position) return `not JSON (at character ${Number(position[1]) + 1})`;
  if (/end of (JSON )?input/i.test(message)) return 'not JSON (ends early)';
  return 'not JSON';
}
