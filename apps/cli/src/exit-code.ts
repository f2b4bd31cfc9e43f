/**
 * Exit codes of `fathom run` (a contract: scripts and CI read them; README "Exit codes").
 * "Could not run" never shares a code with "ran and failed its SLO".
 */
export const ExitCode = {
  /** The run completed and every campaign SLO held. */
  passed: 0,
  /** The run completed and a campaign SLO failed. */
  sloFailed: 1,
  /**
   * Could not run: a usage error, an unreadable or invalid campaign file, an orchestrator that
   * cannot be reached or refuses the campaign, a run that failed (target unreachable) or did
   * not end in time.
   */
  couldNotRun: 2,
  /** The run was aborted by someone else (`POST /v1/runs/:id/abort`, a resolved alert). */
  aborted: 3,
  /** Ctrl-C: the run was aborted and its partial summary printed (128 + SIGINT, as shells do). */
  interrupted: 130,
  /** Whoever read the output closed it early (`fathom ... | head`): 128 + SIGPIPE, as shells do. */
  outputClosed: 141,
} as const;
