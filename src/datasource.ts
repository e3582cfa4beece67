import { DataQuery } from '@grafana/schema';
import {
  AdHocVariableFilter,
  AnnotationQuery,
  CoreApp,
  DataFrame,
  DataQueryRequest,
  DataQueryResponse,
  DataSourceApi,
  DataSourceGetTagKeysOptions,
  DataSourceGetTagValuesOptions,
  DataSourceInstanceSettings,
  DataSourceWithQueryModificationSupport,
  DataSourceWithToggleableQueryFiltersSupport,
  LegacyMetricFindQueryOptions,
  MetricFindValue,
  QueryFilterOptions,
  QueryFixAction,
  ScopedVars,
  TimeRange,
  ToggleFilterAction,
} from '@grafana/data';
import { DataSourceWithBackend, getTemplateSrv, TemplateSrv } from '@grafana/runtime';
import { from, map, mergeMap, Observable, of } from 'rxjs';

import {
  AdHocResult,
  applyAdHoc,
  appliedNotice,
  ignoredNotice,
  nameFieldOf,
  roundRange,
  splitNames,
  TagLookup,
} from './adhoc';
import { framesToEvents, prepareAnnotation, SageAnnotation } from './annotations';
import { AnnotationQueryEditor } from './components/AnnotationQueryEditor';
import { applyFormats } from './format';
import { addResultMatcher, hasMatcher, removeMatcher, toggleMatcher } from './promql/filters';
import { lastHour, ResourceClient } from './resources';
import plugin from './plugin.json';
import { splitRegions } from './regions';
import { isDiagnosis, isHealthQuery, QUERY_TYPE_OPTIONS, queryTypeOf, runsPromQL } from './queryTypes';
import { isTagLabel, TagResolver } from './tags';
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

export class SageDatasource
  extends DataSourceWithBackend<SageQuery, SageOptions>
  implements DataSourceWithQueryModificationSupport<SageQuery>, DataSourceWithToggleableQueryFiltersSupport<SageQuery>
{
  readonly resources: ResourceClient;
  /** Keys and values of ad-hoc filters, cached and shared while in flight. */
  readonly tags: TagLookup;
  readonly tagResolver: TagResolver;
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
    this.tags = new TagLookup(this.resources);
    this.tagResolver = new TagResolver(this.resources);
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

  applyTemplateVariables(query: SageQuery, scopedVars: ScopedVars, filters?: AdHocVariableFilter[]): SageQuery {
    return this.withFilters(query, scopedVars, filters).query;
  }

  /** The query interpolated, then narrowed by the dashboard's ad-hoc filters (src/adhoc.ts). */
  private withFilters(query: SageQuery, scopedVars: ScopedVars, filters?: AdHocVariableFilter[]): AdHocResult {
    const interpolated = {
      ...query,
      region: this.interpolateRegions(query.region, scopedVars),
      expr: this.interpolate(query.expr, scopedVars),
      legendFormat: this.interpolate(query.legendFormat, scopedVars, false),
      interval: this.interpolate(query.interval, scopedVars, false),
      endpoint: this.interpolateNames(query.endpoint, scopedVars),
      inferenceComponent: this.interpolateNames(query.inferenceComponent, scopedVars),
      ...(query.account !== undefined && { account: this.interpolateNames(query.account, scopedVars) }),
      ...(query.gpusPerCopy !== undefined && { gpusPerCopy: this.interpolate(query.gpusPerCopy, scopedVars, false) }),
      ...(query.groupByTag !== undefined && { groupByTag: this.interpolate(query.groupByTag, scopedVars, false) }),
    };
    const region = this.firstRegion(interpolated);
    return applyAdHoc(interpolated, filters, (f) => this.tagResolver.resolved(region, f));
  }

  /** The region an ad-hoc lookup asks about: the first query's first region, else the default. */
  private tagRegion(queries: SageQuery[] | undefined): string {
    return queries?.length ? this.firstRegion(queries[0]) : '';
  }

  /** Label names for a Filters variable, narrowed by its other filters. */
  getTagKeys(options?: DataSourceGetTagKeysOptions<SageQuery>): Promise<MetricFindValue[]> {
    return this.tags.keys(this.tagRegion(options?.queries), options?.filters ?? [], options?.timeRange);
  }

  /** Values of one label for a Filters variable, narrowed by its other filters. */
  getTagValues(options: DataSourceGetTagValuesOptions<SageQuery>): Promise<MetricFindValue[]> {
    return this.tags.values(this.tagRegion(options.queries), options.key, options.filters ?? [], options.timeRange);
  }

  /**
   * Explore's "filter for/out value" on table cells and legends: ADD_FILTER(_OUT) with key and
   * value. PromQL gets the label matcher; a diagnosis, alarms, inventory or cost query is
   * narrowed to the endpoint, IC, region or account filtered for (its names cannot exclude one).
   */
  modifyQuery(query: SageQuery, action: QueryFixAction): SageQuery {
    const key = action.options?.key;
    const value = action.options?.value;
    const out = action.type === 'ADD_FILTER_OUT';
    if (!key || value === undefined || !(out || action.type === 'ADD_FILTER')) {
      return query;
    }
    if (!runsPromQL(query)) {
      return out ? query : filterNameFor(query, key, value, false);
    }
    if (!query.expr) {
      return query;
    }
    const opposite = { name: key, op: out ? '=' : '!=', value } as const;
    const expr = addResultMatcher(removeMatcher(query.expr, opposite), { name: key, op: out ? '!=' : '=', value });
    return { ...query, expr };
  }

  getSupportedQueryModifications(): string[] {
    return ['ADD_FILTER', 'ADD_FILTER_OUT'];
  }

  /** Filter for/out that a second click undoes; the opposite filter is replaced. */
  toggleQueryFilter(query: SageQuery, filter: ToggleFilterAction): SageQuery {
    const { key, value } = filter.options;
    if (!key || value === undefined) {
      return query;
    }
    if (!runsPromQL(query)) {
      return filter.type === 'FILTER_OUT' ? query : filterNameFor(query, key, value, true);
    }
    if (!query.expr) {
      return query;
    }
    return { ...query, expr: toggleMatcher(query.expr, key, value, filter.type === 'FILTER_OUT') };
  }

  /** Whether the query already filters for key = value (Explore shows the toggle as active). */
  queryHasFilter(query: SageQuery, filter: QueryFilterOptions): boolean {
    if (!runsPromQL(query)) {
      return hasNameFilter(query, filter.key, filter.value);
    }
    return (
      Boolean(query.expr) &&
      runsPromQL(query) &&
      hasMatcher(query.expr!, { name: filter.key, op: '=', value: filter.value })
    );
  }

  /** Used when a dashboard query opens in Explore: variables and ad-hoc filters resolve before leaving the dashboard. */
  interpolateVariablesInQueries(
    queries: SageQuery[],
    scopedVars: ScopedVars,
    filters?: AdHocVariableFilter[]
  ): SageQuery[] {
    return queries.map((q) => ({ ...this.applyTemplateVariables(q, scopedVars, filters), datasource: this.getRef() }));
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
    const split = request.targets.flatMap(splitRangeAndInstant);
    // Tag filters are resolved to their endpoints first (one lookup per filter and region),
    // so that applyTemplateVariables finds the answers settled.
    const tagFilters = (request.filters ?? []).filter((f) => isTagLabel(f.key));
    if (tagFilters.length === 0) {
      return this.send(request, split);
    }
    const regions = [...new Set(split.map((t) => this.firstRegion(t, request.scopedVars)))];
    const range = roundRange(request.range);
    const lookups = regions.flatMap((r) => tagFilters.map((f) => this.tagResolver.resolve(r, f, range)));
    return from(Promise.all(lookups)).pipe(mergeMap(() => this.send(request, split)));
  }

  private send(request: DataQueryRequest<SageQuery>, split: SageQuery[]): Observable<DataQueryResponse> {
    const explore = request.app === CoreApp.Explore;
    // Ad-hoc filters: a query they leave nothing of is not sent; the others get a notice
    // naming the filters they ignore.
    const adhoc = new Map(split.map((t) => [t.refId, this.withFilters(t, request.scopedVars, request.filters)]));
    const targets = split.filter((t) => !adhoc.get(t.refId)?.empty);
    const dropped = split.filter((t) => adhoc.get(t.refId)?.empty);
    return super.query({ ...request, targets }).pipe(
      map((response) => ({
        ...response,
        data: [
          ...withNotices(applyFormats(response.data ?? [], targets, explore), adhoc),
          ...dropped.map((t) => emptyFrame(t.refId, adhoc.get(t.refId)!)),
        ],
      }))
    );
  }

  /** Grafana calls it when a panel or Explore switches to this data source: see importQueries. */
  async importQueries(queries: DataQuery[], originDataSource: DataSourceApi): Promise<SageQuery[]> {
    return importQueries(queries, originDataSource.meta?.id ?? originDataSource.type);
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

/** Adds the ignored-filters notice to the frames of each query that ignored some. */
function withNotices(frames: DataFrame[], adhoc: Map<string, AdHocResult>): DataFrame[] {
  return frames.map((f) => {
    const result = adhoc.get(f.refId ?? '');
    const notices = [
      ...(result?.applied?.length ? [appliedNotice(result.applied)] : []),
      ...(result?.ignored.length ? [ignoredNotice(result.ignored)] : []),
    ];
    if (!notices.length) {
      return f;
    }
    return { ...f, meta: { ...f.meta, notices: [...(f.meta?.notices ?? []), ...notices] } };
  });
}

/** The answer of a query the ad-hoc filters leave nothing of. */
function emptyFrame(refId: string, result: AdHocResult): DataFrame {
  const notices = [
    { severity: 'info' as const, text: `No data: the ad-hoc filter ${result.empty}.` },
    ...(result.ignored.length ? [ignoredNotice(result.ignored)] : []),
  ];
  return { refId, name: refId, fields: [], length: 0, meta: { notices } };
}

/** Keeps the PromQL of queries coming from Prometheus-type datasources; others start empty. */
export function importQueries(queries: DataQuery[], originType: string): SageQuery[] {
  if (!PROMQL_DATASOURCE_TYPES.has(originType)) {
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

/** Whether a non-PromQL query is narrowed to exactly this endpoint, IC, region or account. */
function hasNameFilter(query: SageQuery, key: string, value: string): boolean {
  const field = nameFieldOf(query, key);
  const names = field ? splitNames(query[field]) : [];
  return names.length === 1 && names[0] === value;
}

/** Narrows a non-PromQL query's name field to value; toggling undoes a filter already set. */
function filterNameFor(query: SageQuery, key: string, value: string, toggle: boolean): SageQuery {
  const field = nameFieldOf(query, key);
  if (!field) {
    return query;
  }
  return { ...query, [field]: toggle && hasNameFilter(query, key, value) ? '' : value };
}
