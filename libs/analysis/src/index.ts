export * from './slo/slo-tier.evaluator';
export * from './slo/slo-verdict';
