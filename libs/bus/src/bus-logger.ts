/** What the transports log through; services pass their own (e.g. a Nest Logger adapter). */
export interface BusLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  info?(message: string, fields?: Record<string, unknown>): void;
}

export const consoleBusLogger: BusLogger = {
  warn: (message, fields) => console.warn(`[bus] ${message}`, fields ?? ''),
  error: (message, fields) => console.error(`[bus] ${message}`, fields ?? ''),
  info: (message, fields) => console.info(`[bus] ${message}`, fields ?? ''),
};
