export const SERVICE_NAMES = ['orchestrator', 'load-generator', 'semantic-monitor', 'gpu-collector', 'analyzer'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** Consumer groups: one per service, so each service gets every message of a topic once. */
export const ConsumerGroups = {
  orchestrator: 'fathom.orchestrator',
  loadGenerator: 'fathom.load-generator',
  semanticMonitor: 'fathom.semantic-monitor',
  gpuCollector: 'fathom.gpu-collector',
  analyzer: 'fathom.analyzer',
} as const;
