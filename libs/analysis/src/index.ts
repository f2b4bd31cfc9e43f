export * from './slo/slo-tier.evaluator';
export * from './slo/slo-verdict';
export * from './slo/window-figures';
export * from './reruns/rerun.policy';
export * from './report/run-summary.builder';
