import { DataSourceJsonData } from '@grafana/data';
import { DataQuery } from '@grafana/schema';

import defaults from './defaults.json';
import type { QueryType } from './queryTypes';

/**
 * Result formats. PromQL: time_series, table or heatmap, applied in the browser as Grafana's
 * Prometheus frontend does. alarmHistory and inventory: table (default) or annotations,
 * framed by the backend.
 */
export type QueryFormat = 'time_series' | 'table' | 'heatmap' | 'annotations';

export type EditorMode = 'code' | 'builder';

/**
 * The query model. Field names match Grafana's Prometheus datasource so that queries survive
 * a datasource switch in either direction.
 */
export interface SageQuery extends DataQuery {
  queryType?: QueryType;
  expr?: string;
  range?: boolean;
  instant?: boolean;
  legendFormat?: string;
  /** Min step, e.g. "1m"; empty means the datasource's Min step or Grafana's interval. */
  interval?: string;
  intervalFactor?: number;
  format?: QueryFormat;
  editorMode?: EditorMode;
  /**
   * Diagnosis, alarms, alarmHistory and inventory: endpoint filter. Empty or All = any; the
   * values of a multi-value variable are joined by "," (SageMaker names contain none).
   */
  endpoint?: string;
  /** As endpoint, for inference components. */
  inferenceComponent?: string;
  /** Alarms only: resources without any alarm get a state from the engine thresholds. */
  thresholdFallback?: boolean;
  /** Cost only: the table it answers (spend, tokens, idle, prices, fit; docs/cost.md). */
  view?: string;
  /** Cost only: account filter, 12-digit ids joined by ","; empty or All = any. */
  account?: string;
  /** Cost view "fit" only: GPUs one more copy needs (the Will it fit? input). */
  gpusPerCopy?: string;
  /** Cost views spend, tokens and idle: the resource tag key (e.g. Team) rows are summed by. */
  groupByTag?: string;
  /**
   * Every query type: the region(s) to query, several joined by "," (a multi-value variable's
   * values are joined so); empty = the data source's default region.
   */
  region?: string;
}

export type AuthType = 'default' | 'keys' | 'credentials' | 'ec2_iam_role';

/** jsonData keys the Go backend reads (pkg/models). Keep this list in step with it; DEFAULTS has what unset keys mean. */
export interface SageOptions extends DataSourceJsonData {
  authType?: AuthType;
  defaultRegion?: string;
  profile?: string;
  assumeRoleArn?: string;
  externalId?: string;
  endpoint?: string;
  /** Send the backend's calls through Grafana's secure socks proxy (when grafana.ini enables it). */
  enableSecureSocksProxy?: boolean;
  timeInterval?: string;
  queryTimeout?: string;
  httpMethod?: 'POST' | 'GET';
  maxConcurrency?: number;
  requestsPerSecond?: number;
  cacheSizeMiB?: number;
  cacheRefetchWindow?: string;
  cacheFreshFor?: string;
  costPerMillionSamples?: number;
  /** Regions queries may name; empty = the default region and every PromQL region. */
  allowedRegions?: string[];
  /** Region → endpoint base URL; a region without one uses endpoint, else AWS's own. */
  regionEndpoints?: Record<string, string>;
  /** Hourly prices overriding the AWS Price List (docs/cost.md); no region = every region. */
  priceTable?: PriceEntry[];
  /** The optional store replicas share (pkg/sharedstore ParseSettings); absent = no store. */
  sharedStore?: SharedStoreOptions;
}

/**
 * jsonData.sharedStore, as pkg/sharedstore/settings.go reads it. No addresses = no store; an
 * unset key has the backend's default (SHARED_STORE_DEFAULTS).
 */
export interface SharedStoreOptions {
  /** host:port; several (or cluster) mean a Redis Cluster. */
  addresses?: string[];
  /** The addresses are a cluster's single configuration endpoint. */
  cluster?: boolean;
  database?: number;
  username?: string;
  tls?: boolean;
  tlsServerName?: string;
  keyPrefix?: string;
  /** A Go duration: every store operation's deadline. */
  timeout?: string;
  /** Percent of the account's CloudWatch limits the data source's replicas use together. */
  accountShare?: number;
  /** Percent of that share one replica keeps to while the store is unavailable. */
  fallbackShare?: number;
}

/** One jsonData.priceTable entry. */
export interface PriceEntry {
  instanceType: string;
  region?: string;
  usdPerHour: number;
}

/** Write-only secrets; Grafana returns only secureJsonFields flags for them. */
export interface SageSecureJsonData {
  accessKey?: string;
  secretKey?: string;
  sessionToken?: string;
  sharedStorePassword?: string;
  /** PEM of the store's private CA. */
  sharedStoreTLSCACert?: string;
}

export const DEFAULT_QUERY: Partial<SageQuery> = {
  expr: '',
  range: true,
  instant: false,
  format: 'time_series',
  editorMode: 'code',
  legendFormat: '__auto',
};

/** Suffix Grafana's Prometheus frontend gives the instant half of a "Both" query. */
export const INSTANT_REFID_SUFFIX = '-Instant';

/**
 * What an unset jsonData key means: pkg/models' defaults (src/defaults.json is written by
 * `go generate ./pkg/models`; a Go test fails when it is stale).
 */
export const DEFAULTS = defaults as Required<Pick<SageOptions, keyof typeof defaults>>;
