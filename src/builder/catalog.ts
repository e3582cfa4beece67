import table from '../semconv.json';

// The metric catalog of pkg/semconv (src/semconv.json is written by `go generate ./pkg/semconv`
// and checked by a Go test), so the builder and the backend's checks agree on what is delta.

export type MetricType = 'gauge' | 'counter' | 'histogram';
export type Temporality = 'delta' | 'cumulative';

export interface MetricInfo {
  name: string;
  family: string;
  type: MetricType;
  temporality: Temporality;
  unit: string;
}

export const FAMILIES: ReadonlyArray<{ id: string; title: string }> = table.families;

const byName = new Map((table.metrics as MetricInfo[]).map((m) => [m.name, m]));

/** The catalog entry of a metric; undefined for names the catalog does not know (custom OTLP metrics). */
export function metricInfo(name: string): MetricInfo | undefined {
  return byName.get(name);
}

export function catalogMetrics(): MetricInfo[] {
  return [...byName.values()];
}

/** One line for the picker: "histogram · delta · µs". */
export function describeMetric(m: MetricInfo): string {
  return [m.type, m.type === 'gauge' ? '' : m.temporality, m.unit].filter(Boolean).join(' · ');
}
