import { TimeRange } from '@grafana/data';

import { CACHE_TTL_MS, LookupCache } from './lookupCache';
import { AdHocFilter, filterMatcher, regexLiteral } from './promql/filters';
import { LabelMatcher, selector } from './promql/names';
import { ResourceClient } from './resources';
import table from './semconv.json';

// Resource tags in ad-hoc filters. With OTel enrichment on, CloudWatch labels the vended
// metrics "@aws.tag.<Key>" (docs/cloudwatch-promql.md §11.1); engine, DCGM and host series
// carry no tags, so a tag filter reaches them through the endpoints the tag belongs to.

export const TAG_PREFIX = '@aws.tag.';

/** The endpoint label the untagged families carry. */
export const ENDPOINT_LABEL = 'aws.sagemaker.endpoint.name';

/** Whether an ad-hoc filter key is a resource tag label. */
export function isTagLabel(name: string): boolean {
  return name.startsWith(TAG_PREFIX) && name.length > TAG_PREFIX.length;
}

/** The families CloudWatch documents as enriched with tags. */
const TAGGED_FAMILIES = new Set(['vended']);
const metricFamily = new Map(table.metrics.map((m) => [m.name, m.family]));
const familyLabels = new Map(table.families.map((f) => [f.id, new Set(f.labels)]));
const catalogLabels = new Set(table.families.flatMap((f) => f.labels));

/**
 * Whether a selector of metric may carry resource tags: a vended metric, or one the catalog
 * does not know (a custom metric may be enriched; Prometheus would match it too).
 */
export function metricCarriesTags(metric: string | undefined): boolean {
  const family = metric === undefined ? undefined : metricFamily.get(metric);
  return family === undefined || TAGGED_FAMILIES.has(family);
}

/** Whether a selector of a catalog metric without tags can be narrowed by endpoint. */
export function narrowedByEndpoint(metric: string | undefined): boolean {
  const family = metric === undefined ? undefined : metricFamily.get(metric);
  return family !== undefined && !TAGGED_FAMILIES.has(family) && familyLabels.get(family)?.has(ENDPOINT_LABEL) === true;
}

/** Whether some family of the catalog lists the label. */
export function catalogLabel(name: string): boolean {
  return catalogLabels.has(name);
}

/** The matcher keeping the series of these endpoints; none keeps nothing (the label is never empty). */
export function endpointMatcher(endpoints: string[]): LabelMatcher {
  return { name: ENDPOINT_LABEL, op: '=~', value: endpoints.map(regexLiteral).join('|') };
}

/**
 * The vended metric a tag resolves on, and its endpoint dimension: one series per endpoint,
 * written every minute the endpoint serves.
 */
const RESOLVE_METRIC = 'Invocations';
const RESOLVE_LABEL = 'EndpointName';

/** A tag filter resolved to the endpoints it keeps, or why it could not be. */
export type Resolution = { endpoints: string[] } | { error: string };

/** What applyAdHoc asks about a tag filter; undefined when it was not resolved. */
export type Resolve = (f: AdHocFilter) => Resolution | undefined;

const filterKey = (region: string, f: AdHocFilter) =>
  [region, f.key, f.operator, f.value, ...(f.values ?? [])].join('\n');

/**
 * Resolves tag filters to endpoints with one label-values call each (EndpointName of
 * Invocations with the tag's matcher), through a LookupCache like the pickers' lookups, so a
 * dashboard's panels and a refresh within a minute share it. The latest answer per region and
 * filter is also kept settled, for applyTemplateVariables, which cannot wait.
 */
export class TagResolver {
  private readonly cache: LookupCache;
  private readonly settled = new Map<string, { at: number; value: Resolution }>();

  constructor(
    private readonly resources: ResourceClient,
    private readonly now: () => number = Date.now
  ) {
    this.cache = new LookupCache(now);
  }

  /** Resolves the filter in the region over the range; a failure becomes an error resolution. */
  async resolve(region: string, f: AdHocFilter, range: TimeRange): Promise<Resolution> {
    const m = filterMatcher(f);
    if (!m) {
      return { error: 'PromQL label matchers have no such operator' };
    }
    const match = [selector(RESOLVE_METRIC, [m])];
    const key = ['tag', region, range.from.valueOf(), range.to.valueOf(), ...match].join('\n');
    let value: Resolution;
    try {
      const names = await this.cache.get(key, () =>
        this.resources.inRegion(region).labelValues(RESOLVE_LABEL, match, range)
      );
      value = { endpoints: [...names].sort() };
    } catch (e) {
      value = { error: e instanceof Error ? e.message : String(e) };
    }
    this.settled.set(filterKey(region, f), { at: this.now(), value });
    return value;
  }

  /** The latest resolution of the filter in the region, while it is fresh. */
  resolved(region: string, f: AdHocFilter): Resolution | undefined {
    const hit = this.settled.get(filterKey(region, f));
    return hit && this.now() - hit.at < CACHE_TTL_MS ? hit.value : undefined;
  }
}
