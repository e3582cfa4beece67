import { dateTime, MetricFindValue, QueryResultMetaNotice, TimeRange } from '@grafana/data';

import { LookupCache } from './lookupCache';
import { AdHocFilter, addMatcher, applyFilters, filterMatcher, hasMatcher, parses } from './promql/filters';
import { LabelMatcher, selector } from './promql/names';
import { isDiagnosis, isHealthQuery, queryTypeOf, runsPromQL } from './queryTypes';
import { lastHour, ResourceClient } from './resources';
import { catalogLabel, endpointMatcher, isTagLabel, metricCarriesTags, narrowedByEndpoint, Resolve } from './tags';
import { SageQuery } from './types';

// Ad-hoc filters ("Filters" variables): key and value discovery for the pickers, and what the
// applied filters do to each query type.

/**
 * Lookups round their range to this step, so that the pickers of every panel and a refresh a
 * little later ask the same thing and share one answer (the backend rounds to 5 minutes).
 */
export const RANGE_STEP_MS = 60_000;

export function roundRange(range: TimeRange | undefined): TimeRange {
  const r = range ?? lastHour();
  const from = Math.floor(r.from.valueOf() / RANGE_STEP_MS) * RANGE_STEP_MS;
  const to = Math.ceil(r.to.valueOf() / RANGE_STEP_MS) * RANGE_STEP_MS;
  return { from: dateTime(from), to: dateTime(to), raw: r.raw };
}

/**
 * The selector that narrows a lookup to the series the other filters keep. CloudWatch, like
 * Prometheus, refuses a selector whose every matcher matches the empty string, so the filters
 * narrow only when one of them is an equality to a non-empty value.
 */
export function lookupMatch(filters: AdHocFilter[], except?: string): string[] {
  const matchers = filters
    .filter((f) => f.key !== except)
    .map(filterMatcher)
    .filter((m): m is LabelMatcher => m !== undefined && m.name !== '');
  return matchers.some((m) => m.op === '=' && m.value !== '') ? [selector(undefined, matchers)] : [];
}

const texts = (values: string[]): MetricFindValue[] => values.map((text) => ({ text, value: text }));

/**
 * Label names and values for the Filters pickers, through the resource routes. Answers are
 * kept for a minute and shared while in flight (LookupCache): a dashboard opening with several
 * filters and panels asks CloudWatch once per distinct lookup.
 */
export class TagLookup {
  private readonly cache: LookupCache;

  constructor(
    private readonly resources: ResourceClient,
    now: () => number = Date.now
  ) {
    this.cache = new LookupCache(now);
  }

  keys(region: string, filters: AdHocFilter[], range?: TimeRange): Promise<MetricFindValue[]> {
    const match = lookupMatch(filters);
    const r = roundRange(range);
    const key = ['keys', region, r.from.valueOf(), r.to.valueOf(), ...match].join('\n');
    return this.cache.get(key, async () => {
      const names = await this.resources.inRegion(region).labelNames(match, r);
      return texts(names.filter((n) => n !== '__name__'));
    });
  }

  values(region: string, label: string, filters: AdHocFilter[], range?: TimeRange): Promise<MetricFindValue[]> {
    // The filter being edited must not narrow its own values.
    const match = lookupMatch(filters, label);
    const r = roundRange(range);
    const key = ['values', region, label, r.from.valueOf(), r.to.valueOf(), ...match].join('\n');
    return this.cache.get(key, async () => texts(await this.resources.inRegion(region).labelValues(label, match, r)));
  }
}

/**
 * Labels naming what the diagnosis, alarms, inventory, cost and changes queries filter by, per
 * query field, and their frames' columns of the same (alarms and inventory: endpoint…; cost:
 * Endpoint…), which Explore's filter for/out passes as the key.
 */
const FIELD_LABELS = {
  endpoint: ['aws.sagemaker.endpoint.name', 'EndpointName', 'endpoint', 'Endpoint'],
  inferenceComponent: [
    'aws.sagemaker.inference_component.name',
    'InferenceComponentName',
    'inference_component',
    'Inference component',
  ],
  region: ['@aws.region', 'Region', 'region'],
  account: ['@aws.account', 'account', 'Account'],
} as const;

type NameField = keyof typeof FIELD_LABELS;

const FIELD_NAMES: Record<NameField, string> = {
  endpoint: 'endpoints',
  inferenceComponent: 'inference components',
  region: 'regions',
  account: 'accounts',
};

/** The name fields of a query type that has them, as its ignored-filter notice lists them. */
function nameFields(query: SageQuery): { fields: NameField[]; listed: string } | undefined {
  if (queryTypeOf(query) === 'cost' || queryTypeOf(query) === 'changes') {
    return {
      fields: ['endpoint', 'inferenceComponent', 'region', 'account'],
      listed: 'endpoint, inference component, region and account',
    };
  }
  if (isDiagnosis(query) || isHealthQuery(query)) {
    return { fields: ['endpoint', 'inferenceComponent', 'region'], listed: 'endpoint, inference component and region' };
  }
  return undefined;
}

/**
 * The field of a diagnosis, alarms, inventory or cost query that a label or column narrows
 * (endpoint, inference component, region, account); undefined for PromQL and other keys.
 */
export function nameFieldOf(query: SageQuery, key: string): NameField | undefined {
  return nameFields(query)?.fields.find((k) => (FIELD_LABELS[k] as readonly string[]).includes(key));
}

/** A query's name field as names: "a, b" → [a, b]; empty = any. */
export const splitNames = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);

/** What applying ad-hoc filters made of a query. */
export interface AdHocResult {
  query: SageQuery;
  /** Filters the query does not take, one line each, for a frame notice. */
  ignored: string[];
  /** Why the filters leave nothing of the query's own endpoints, components or regions; unset when they do not. */
  empty?: string;
  /** How tag filters were applied through their endpoints, one line each, for a frame notice. */
  applied?: string[];
}

function describe(f: AdHocFilter): string {
  const value = f.values?.length ? f.values.join(' | ') : f.value;
  return `${f.key} ${f.operator} ${JSON.stringify(value)}`;
}

/** The names an equality filter (= or =|) keeps; undefined for any other operator. */
function keptNames(f: AdHocFilter): string[] | undefined {
  if (f.operator === '=') {
    return [f.value];
  }
  return f.operator === '=|' ? (f.values?.length ? f.values : [f.value]) : undefined;
}

/**
 * Applies ad-hoc filters to an interpolated query. PromQL: each filter's matcher goes into the
 * selectors of the metrics that carry its label. Diagnosis, alarms, alarm history, inventory,
 * cost and changes: an equality filter on the endpoint, inference component or region label
 * (cost and changes: also the account) narrows that field (to the names both the query and
 * the filter allow).
 * A resource tag filter ("@aws.tag.<Key>") goes into the selectors of the metrics that carry
 * tags, and reaches the others, and the name fields, through the endpoints resolve gives it.
 * Filters a query cannot take are listed in ignored.
 */
export function applyAdHoc(query: SageQuery, filters: AdHocFilter[] | undefined, resolve?: Resolve): AdHocResult {
  if (!filters?.length) {
    return { query, ignored: [] };
  }
  if (runsPromQL(query)) {
    const expr = query.expr ?? '';
    if (expr.trim() !== '' && !parses(expr)) {
      return {
        query,
        ignored: filters.map((f) => `${describe(f)}: the query is not valid PromQL; fix it and the filter applies`),
      };
    }
    // Tag filters are applied below, through their endpoints where the series carry no tags.
    const tags = filters.filter((f) => isTagLabel(f.key) && filterMatcher(f));
    const plain = filters.filter((f) => !tags.includes(f));
    // A label no family of the catalog lists goes into every selector, as Prometheus does.
    const everywhere = plain.filter(
      (f) => f.key !== '' && !isTagLabel(f.key) && !catalogLabel(f.key) && filterMatcher(f)
    );
    const out = applyFilters(
      expr,
      plain.filter((f) => !everywhere.includes(f))
    );
    let next = everywhere.reduce((e, f) => addMatcher(e, filterMatcher(f)!, () => true), out.expr);
    const ignored = out.unsupported.map(
      (f) =>
        `${describe(f)}: ${f.key === '' ? 'the filter names no label' : 'PromQL label matchers have no such operator'}`
    );
    for (const f of plain) {
      const m = filterMatcher(f);
      if (m && !out.unsupported.includes(f) && !hasMatcher(next, m)) {
        ignored.push(`${describe(f)}: no metric of this query carries ${f.key}`);
      }
    }
    const applied: string[] = [];
    for (const f of tags) {
      const m = filterMatcher(f)!;
      const tagged = addMatcher(next, m, metricCarriesTags);
      // Whether some selector carries no tags but can be narrowed by endpoint.
      const narrowable = addMatcher(tagged, endpointMatcher([]), narrowedByEndpoint) !== tagged;
      const r = resolve?.(f);
      if (narrowable && r && 'endpoints' in r) {
        next = addMatcher(tagged, endpointMatcher(r.endpoints), narrowedByEndpoint);
        const kept = r.endpoints.length
          ? `its endpoints ${r.endpoints.join(', ')}`
          : 'its endpoints, none in this range';
        applied.push(`${describe(f)}: series without resource tags kept to ${kept}`);
        continue;
      }
      next = tagged;
      if (narrowable) {
        const why = r && 'error' in r ? `: ${r.error}` : '';
        ignored.push(
          `${describe(f)}: series without resource tags are not narrowed; its endpoints could not be looked up${why}`
        );
      } else if (!hasMatcher(next, m)) {
        ignored.push(`${describe(f)}: no metric of this query carries ${f.key}`);
      }
    }
    return { query: { ...query, expr: next }, ignored, ...(applied.length && { applied }) };
  }
  const named = nameFields(query);
  if (!named) {
    return { query, ignored: filters.map((f) => `${describe(f)}: this query type takes no filters`) };
  }
  const next = { ...query };
  const ignored: string[] = [];
  const applied: string[] = [];
  let empty: string | undefined;
  for (const f of filters) {
    let field = nameFieldOf(query, f.key);
    let names = keptNames(f);
    if (isTagLabel(f.key) && filterMatcher(f)) {
      // A tag narrows the endpoint field to the endpoints it resolves to.
      const r = resolve?.(f);
      if (!r || 'error' in r) {
        ignored.push(`${describe(f)}: its endpoints could not be looked up${r ? `: ${r.error}` : ''}`);
        continue;
      }
      if (r.endpoints.length === 0) {
        empty ??= `${describe(f)} matches no endpoint in this range`;
      } else {
        applied.push(`${describe(f)}: kept to its endpoints ${r.endpoints.join(', ')}`);
      }
      [field, names] = ['endpoint', r.endpoints];
    }
    if (!field || !names) {
      ignored.push(
        `${describe(f)}: ${field ? 'only = and one-of filters' : `only ${named.listed} filters`} narrow this query`
      );
      continue;
    }
    const current = splitNames(next[field]);
    const kept = current.length ? current.filter((n) => names.includes(n)) : names;
    if (kept.length === 0) {
      empty ??= `${describe(f)} keeps none of the query's ${FIELD_NAMES[field]} (${current.join(', ')})`;
    }
    next[field] = kept.join(',');
  }
  return { query: next, ignored, empty, ...(applied.length && { applied }) };
}

/** The frame notice saying how tag filters reached the series without tags. */
export function appliedNotice(applied: string[]): QueryResultMetaNotice {
  return { severity: 'info', text: `Ad-hoc tag filters applied through their endpoints:\n${applied.join('\n')}` };
}

/** The frame notice listing the filters a query ignored. */
export function ignoredNotice(ignored: string[]): QueryResultMetaNotice {
  return { severity: 'info', text: `Ad-hoc filters ignored by this query:\n${ignored.join('\n')}` };
}
