import { Registry, collectDefaultMetrics } from 'prom-client';

/**
 * One Prometheus registry per process, labelled with the service name(s) it hosts. In the
 * embedded mode all five services share it (label `service="fathom"`).
 */
export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}
