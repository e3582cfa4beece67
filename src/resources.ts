import { dateTime, TimeRange } from '@grafana/data';

/** The part of DataSourceWithBackend the resource client needs; tests pass a fake. */
export interface ResourceFetcher {
  getResource<T = unknown>(path: string, params?: Record<string, unknown>): Promise<T>;
}

/** The Prometheus API envelope the backend passes through. */
interface PromEnvelope<T> {
  status?: string;
  data?: T;
  error?: string;
}

/** A vector/matrix/scalar result of api/v1/query as the backend passes it through. */
export interface PromQueryData {
  resultType: 'vector' | 'matrix' | 'scalar' | 'string';
  result: unknown;
}

/** The body of the inventory resources: names, sorted by the backend. */
interface NamesBody {
  values?: unknown;
}

/** Paths of the inventory resources (SageMaker ListEndpoints / ListInferenceComponents). */
export const INVENTORY_ENDPOINTS_PATH = 'inventory/endpoints';
export const INVENTORY_COMPONENTS_PATH = 'inventory/components';
/** Path of the regions resource (the regions() variable and the query editor's Region picker). */
export const REGIONS_PATH = 'regions';

/** Default window for discovery calls made without a dashboard time range. */
const DEFAULT_LOOKBACK_MS = 60 * 60 * 1000;

/** Upper bound on discovery results; CloudWatch allows up to 10000 per call. */
export const DISCOVERY_LIMIT = 10000;

/** The path of the label-values resource; dotted and @ names are URL-escaped (@ → %40). */
export function labelValuesPath(label: string): string {
  return `api/v1/label/${encodeURIComponent(label)}/values`;
}

function seconds(ms: number): string {
  return String(Math.floor(ms / 1000));
}

/** Timestamps in unix seconds for a range, or the last hour when none is given. */
export function rangeParams(range?: TimeRange, now = Date.now()): { start: string; end: string } {
  if (range) {
    return { start: seconds(range.from.valueOf()), end: seconds(range.to.valueOf()) };
  }
  return { start: seconds(now - DEFAULT_LOOKBACK_MS), end: seconds(now) };
}

/** A range covering the last hour, for callers that must pass one explicitly. */
export function lastHour(now = Date.now()): TimeRange {
  const from = dateTime(now - DEFAULT_LOOKBACK_MS);
  const to = dateTime(now);
  return { from, to, raw: { from: 'now-1h', to: 'now' } };
}

function unwrap<T>(path: string, body: PromEnvelope<T> | undefined): T {
  if (!body || body.status !== 'success' || body.data === undefined) {
    const reason = body?.error ?? 'unexpected response shape';
    throw new Error(`${path}: ${reason}`);
  }
  return body.data;
}

/**
 * Discovery calls through the plugin's resource routes (the backend signs and forwards them to
 * CloudWatch). Every method returns plain values; errors name the path and the API's message.
 * Each call carries the client's region (query parameter `region`) when it has one.
 */
export class ResourceClient {
  /** region: the region every call asks about; empty = the data source's default region. */
  constructor(
    private readonly fetcher: ResourceFetcher,
    readonly region = ''
  ) {}

  /** A client whose calls ask about that region (empty = the default region). */
  inRegion(region: string): ResourceClient {
    return region === this.region ? this : new ResourceClient(this.fetcher, region);
  }

  private fetch<T>(path: string, params: Record<string, unknown>): Promise<T> {
    return this.fetcher.getResource<T>(path, this.region ? { ...params, region: this.region } : params);
  }

  private async get<T>(path: string, params: Record<string, unknown>): Promise<T> {
    const body = await this.fetch<PromEnvelope<T>>(path, params);
    return unwrap(path, body);
  }

  /**
   * The regions where the data source's credentials find SageMaker metrics (the backend falls
   * back to the configured list), sorted.
   */
  async regions(): Promise<string[]> {
    const body = await this.fetcher.getResource<unknown>(REGIONS_PATH);
    if (!Array.isArray(body) || !body.every((v) => typeof v === 'string')) {
      throw new Error(`${REGIONS_PATH}: unexpected response shape, want ["us-east-1", ...]`);
    }
    return body;
  }

  /** Label names, optionally only those of series matching the selectors. */
  labelNames(matchers: string[] = [], range?: TimeRange): Promise<string[]> {
    return this.get<string[]>('api/v1/labels', withMatch({ ...rangeParams(range), limit: DISCOVERY_LIMIT }, matchers));
  }

  /** Values of one label, optionally only on series matching the selectors. */
  labelValues(label: string, matchers: string[] = [], range?: TimeRange): Promise<string[]> {
    return this.get<string[]>(
      labelValuesPath(label),
      withMatch({ ...rangeParams(range), limit: DISCOVERY_LIMIT }, matchers)
    );
  }

  /** Metric names: the values of __name__. */
  metricNames(matchers: string[] = [], range?: TimeRange): Promise<string[]> {
    return this.labelValues('__name__', matchers, range);
  }

  /** Label sets of the series matching the selectors (at least one is required by the API). */
  series(matchers: string[], range?: TimeRange): Promise<Array<Record<string, string>>> {
    if (matchers.length === 0) {
      return Promise.reject(new Error('api/v1/series: at least one series selector is required'));
    }
    return this.get<Array<Record<string, string>>>(
      'api/v1/series',
      withMatch({ ...rangeParams(range), limit: DISCOVERY_LIMIT }, matchers)
    );
  }

  /** Every SageMaker endpoint of the data source's region, GPU metrics or not. */
  endpoints(): Promise<string[]> {
    return this.names(INVENTORY_ENDPOINTS_PATH, {});
  }

  /**
   * Inference components, of the given endpoints only when any are given (several joined by
   * ",", as the backend splits them).
   */
  inferenceComponents(endpoints: string[] = []): Promise<string[]> {
    const names = endpoints.map((e) => e.trim()).filter(Boolean);
    return this.names(INVENTORY_COMPONENTS_PATH, names.length ? { endpoint: names.join(',') } : {});
  }

  private async names(path: string, params: Record<string, unknown>): Promise<string[]> {
    const body = await this.fetch<NamesBody>(path, params);
    const values = body?.values;
    if (!Array.isArray(values) || !values.every((v) => typeof v === 'string')) {
      throw new Error(`${path}: unexpected response shape, want {"values": [names]}`);
    }
    return values;
  }

  /** An instant query at the end of the range, returning the raw Prometheus result. */
  instantQuery(expr: string, range?: TimeRange): Promise<PromQueryData> {
    return this.get<PromQueryData>('api/v1/query', { query: expr, time: rangeParams(range).end });
  }
}

function withMatch(params: Record<string, unknown>, matchers: string[]): Record<string, unknown> {
  const match = matchers.filter((m) => m.trim() !== '');
  // Grafana serialises an array parameter as repeated keys: match[]=a&match[]=b.
  return match.length ? { ...params, 'match[]': match } : params;
}
