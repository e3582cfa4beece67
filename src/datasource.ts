import {
  AnnotationQuery,
  CoreApp,
  DataQuery,
  DataQueryRequest,
  DataQueryResponse,
  DataSourceApi,
  DataSourceInstanceSettings,
  LegacyMetricFindQueryOptions,
  MetricFindValue,
  ScopedVars,
  TimeRange,
} from '@grafana/data';
import { DataSourceWithBackend, getTemplateSrv, TemplateSrv } from '@grafana/runtime';
import { map, Observable, of } from 'rxjs';

import { framesToEvents, prepareAnnotation, SageAnnotation } from './annotations';
import { AnnotationQueryEditor } from './components/AnnotationQueryEditor';
import { applyFormats } from './format';
import { lastHour, ResourceClient } from './resources';
import plugin from './plugin.json';
import { splitRegions } from './regions';
import { isDiagnosis, isHealthQuery, QUERY_TYPE_OPTIONS, queryTypeOf, runsPromQL } from './queryTypes';
import { DEFAULT_QUERY, DEFAULTS, INSTANT_REFID_SUFFIX, SageOptions, SageQuery } from './types';
import {
  isInventoryVariableQuery,
  nameFilter,
  resolveVariableQuery,
  toVariableQuery,
  VariableQuery,
} from './variables';
import { SageVariableSupport } from './variableSupport';

/** Datasource types whose queries are PromQL in the same model as ours. */
export const PROMQL_DATASOURCE_TYPES = new Set([
  'prometheus',
  'grafana-amazonprometheus-datasource',
  'grafana-azureprometheus-datasource',
  plugin.id,
]);

/**
 * Variables the backend computes from the final step and range; interpolating them here would
 * freeze Grafana's own guess of the interval into the query.
 */
const BACKEND_VARIABLES = ['__interval', '__interval_ms', '__rate_interval', '__range', '__range_s', '__range_ms'];

/**
 * Escapes a value for use inside a PromQL regex matcher in a double-quoted string: a regex
 * metacharacter gets a backslash for the regex engine, and that backslash is itself escaped
 * for the string ("a.b" becomes a\\.b in the query text).
 */
export function escapeForRegex(value: string): string {
  return value
    .replace(/\\/g, '\\\\\\\\')
    .replace(/[$^*{}[\]+?.()|]/g, '\\\\$&')
    .replace(/"/g, '\\"');
}

/** Escapes a single value for a double-quoted PromQL string. */
function escapeForString(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
}

interface VariableLike {
  multi?: boolean;
  includeAll?: boolean;
}

/** The template formatter: multi-value and All variables become an escaped regex alternation. */
export function interpolateValue(value: string | string[], variable?: VariableLike): string {
  const regexVariable = Boolean(variable?.multi || variable?.includeAll);
  if (typeof value === 'string') {
    return regexVariable ? escapeForRegex(value) : escapeForString(value);
  }
  const escaped = value.map(escapeForRegex);
  return escaped.length === 1 ? escaped[0] : `(${escaped.join('|')})`;
}

/** The template formatter of endpoint and IC filters: several values joined by ",". */
export function joinNames(value: string | string[]): string {
  return Array.isArray(value) ? value.join(',') : value;
}

/** Replaces $__range, $__range_s and $__range_ms (plain or in braces) with the range's length. */
export function interpolateRange(text: string, range: TimeRange): string {
  const ms = range.to.valueOf() - range.from.valueOf();
  const s = Math.round(ms / 1000);
  return text.replace(/\$(?:\{__range(_ms|_s)?\}|__range(_ms|_s)?\b)/g, (_, braced, bare) => {
    const unit = braced ?? bare;
    return unit === '_ms' ? String(ms) : unit === '_s' ? String(s) : `${s}s`;
  });
}

/** "Both" becomes a range query and an instant one (refId + "-Instant"), as Grafana's Prometheus frontend does. */
export function splitRangeAndInstant(query: SageQuery): SageQuery[] {
  if (!runsPromQL(query) || !(query.range && query.instant)) {
    return [query];
  }
  return [
    { ...query, instant: false },
    { ...query, range: false, refId: `${query.refId}${INSTANT_REFID_SUFFIX}` },
  ];
}

export class SageDatasource extends DataSourceWithBackend<SageQuery, SageOptions> {
  readonly resources: ResourceClient;
  /** The data source's region, for the aws_region() and aws_console() variables. */
  readonly region: string;

  // templateSrv has a default so that the constructor's length is 1: Grafana treats classes
  // with longer constructors as Angular plugins.
  constructor(
    instanceSettings: DataSourceInstanceSettings<SageOptions>,
    private readonly templateSrv: TemplateSrv = getTemplateSrv()
  ) {
    super(instanceSettings);
    // Grafana uses the data source's interval as the lower bound of $__interval and of the
    // interval it sends; unset, CloudWatch's one-minute resolution (as the backend assumes).
    this.interval = instanceSettings.jsonData?.timeInterval || DEFAULTS.timeInterval;
    this.region = instanceSettings.jsonData?.defaultRegion ?? '';
    this.resources = new ResourceClient(this);
    this.variables = new SageVariableSupport(this);
    this.annotations = {
      QueryEditor: AnnotationQueryEditor,
      prepareAnnotation: (json: AnnotationQuery<SageQuery>) => prepareAnnotation(json as SageAnnotation),
      processEvents: (anno, frames) => of(framesToEvents(frames, anno as SageAnnotation)),
    };
  }

  getDefaultQuery(app: CoreApp): Partial<SageQuery> {
    // Explore shows the instant table next to the graph, as it does for Prometheus.
    return app === CoreApp.Explore ? { ...DEFAULT_QUERY, instant: true } : DEFAULT_QUERY;
  }

  filterQuery(query: SageQuery): boolean {
    if (query.hide) {
      return false;
    }
    return !runsPromQL(query) || Boolean(query.expr?.trim());
  }

  /** Interpolates with the backend's own variables left in place. */
  interpolate(text: string | undefined, scopedVars: ScopedVars = {}, regexFormat = true): string | undefined {
    if (text === undefined) {
      return undefined;
    }
    const vars = Object.fromEntries(Object.entries(scopedVars).filter(([k]) => !BACKEND_VARIABLES.includes(k)));
    return this.templateSrv.replace(text, vars, regexFormat ? interpolateValue : undefined);
  }

  /**
   * Interpolates an endpoint or IC filter: a multi-value variable's names joined by ",", and
   * All (whatever its allValue) as "" (any), the form the backend reads.
   */
  interpolateNames(text: string | undefined, scopedVars: ScopedVars = {}): string | undefined {
    return text === undefined ? undefined : nameFilter(this.templateSrv.replace(text, scopedVars, joinNames));
  }

  /**
   * Interpolates a query's region: a multi-value variable's regions (All: every value) joined
   * by ",", the form the backend reads; empty stays empty (the default region).
   */
  interpolateRegions(text: string | undefined, scopedVars: ScopedVars = {}): string | undefined {
    return text === undefined
      ? undefined
      : splitRegions(this.templateSrv.replace(text, scopedVars, joinNames)).join(',');
  }

  /**
   * The region discovery calls for a query ask about (completion, label and value lookups):
   * its first region, interpolated; empty = the default region.
   */
  firstRegion(query: SageQuery, scopedVars?: ScopedVars): string {
    return splitRegions(this.interpolateRegions(query.region, scopedVars))[0] ?? '';
  }

  /** The dashboard's variables as $name, for pickers that accept them. */
  variableOptions(): string[] {
    return this.templateSrv.getVariables().map((v) => `$${v.name}`);
  }

  applyTemplateVariables(query: SageQuery, scopedVars: ScopedVars): SageQuery {
    return {
      ...query,
      region: this.interpolateRegions(query.region, scopedVars),
      expr: this.interpolate(query.expr, scopedVars),
      legendFormat: this.interpolate(query.legendFormat, scopedVars, false),
      interval: this.interpolate(query.interval, scopedVars, false),
      endpoint: this.interpolateNames(query.endpoint, scopedVars),
      inferenceComponent: this.interpolateNames(query.inferenceComponent, scopedVars),
      ...(query.account !== undefined && { account: this.interpolateNames(query.account, scopedVars) }),
      ...(query.gpusPerCopy !== undefined && { gpusPerCopy: this.interpolate(query.gpusPerCopy, scopedVars, false) }),
    };
  }

  /** Used when a dashboard query opens in Explore: variables resolve before leaving the dashboard. */
  interpolateVariablesInQueries(queries: SageQuery[], scopedVars: ScopedVars): SageQuery[] {
    return queries.map((q) => ({ ...this.applyTemplateVariables(q, scopedVars), datasource: this.getRef() }));
  }

  /** Query history and the inspector show the PromQL itself. */
  getQueryDisplayText(query: SageQuery): string {
    if (isDiagnosis(query) || isHealthQuery(query) || queryTypeOf(query) === 'cost') {
      const label = QUERY_TYPE_OPTIONS.find((o) => o.value === queryTypeOf(query))?.label;
      return `${label}: ${[query.endpoint, query.inferenceComponent].filter(Boolean).join(' / ') || 'all endpoints'}`;
    }
    return query.expr ?? '';
  }

  query(request: DataQueryRequest<SageQuery>): Observable<DataQueryResponse> {
    const targets = request.targets.flatMap(splitRangeAndInstant);
    const explore = request.app === CoreApp.Explore;
    return super
      .query({ ...request, targets })
      .pipe(map((response) => ({ ...response, data: applyFormats(response.data ?? [], targets, explore) })));
  }

  /** Keeps the PromQL of queries coming from Prometheus-type datasources; others start empty. */
  async importQueries(queries: DataQuery[], originDataSource: DataSourceApi): Promise<SageQuery[]> {
    if (!PROMQL_DATASOURCE_TYPES.has(originDataSource.meta?.id ?? originDataSource.type)) {
      return queries.map((q) => ({ ...DEFAULT_QUERY, refId: q.refId }));
    }
    return queries.map((q) => {
      const p = q as SageQuery;
      return {
        ...DEFAULT_QUERY,
        refId: p.refId,
        hide: p.hide,
        expr: p.expr ?? '',
        legendFormat: p.legendFormat ?? DEFAULT_QUERY.legendFormat,
        interval: p.interval,
        intervalFactor: p.intervalFactor,
        format: p.format ?? 'time_series',
        range: p.range ?? !p.instant,
        instant: p.instant ?? false,
        editorMode: 'code',
      };
    });
  }

  /**
   * Variable values through the resource routes, asked in each of the variable query's
   * regions (interpolated as a query's); accepts the classic string forms.
   */
  metricFindQuery(query: string | VariableQuery, options?: LegacyMetricFindQueryOptions): Promise<MetricFindValue[]> {
    const range = options?.range ?? lastHour();
    const stored = toVariableQuery(query);
    // Variable queries never reach the backend's interpolation, so the range variables are filled here.
    const text = interpolateRange(stored.query, range);
    // The inventory forms take names (joined by ","), not a regex.
    const interpolated = isInventoryVariableQuery(text)
      ? this.templateSrv.replace(text, options?.scopedVars, joinNames)
      : (this.interpolate(text, options?.scopedVars) ?? '');
    const regions = splitRegions(this.interpolateRegions(stored.region, options?.scopedVars));
    return resolveVariableQuery(interpolated, this.resources, range, this.region, regions);
  }
}
