import { MetricFindValue, TimeRange } from '@grafana/data';
import { DataQuery } from '@grafana/schema';

import { stringLiteralEnd, unquoteName } from './promql/names';
import { PromQueryData, ResourceClient } from './resources';

/**
 * A query variable. The classic string form is the source of truth (it is what dashboards as
 * code and Prometheus dashboards store); qryType only remembers the editor's choice.
 */
export interface VariableQuery extends DataQuery {
  qryType?: VariableQueryKind;
  query: string;
  /**
   * The regions to list from, as a query's region field: one, several joined by ",", or a
   * variable ($region); empty = the data source's default region.
   */
  region?: string;
}

export type VariableQueryKind =
  | 'label_names'
  | 'label_values'
  | 'metrics'
  | 'query_result'
  | 'endpoints'
  | 'inference_components'
  | 'aws_region'
  | 'aws_console'
  | 'regions';

export type ParsedVariableQuery =
  | { kind: 'label_names'; match?: string }
  | { kind: 'label_values'; label: string; match?: string }
  | { kind: 'metrics'; regex: string }
  | { kind: 'query_result'; expr: string }
  | { kind: 'endpoints' }
  | { kind: 'inference_components'; endpoint?: string }
  | { kind: 'aws_region' }
  | { kind: 'aws_console' }
  | { kind: 'regions' };

const FORMS =
  'label_names([selector]), label_values([selector,] label), metrics(regex), query_result(expr), ' +
  'endpoints(), inference_components([endpoint]), regions(), aws_region() or aws_console()';

/** The data source's own forms: its region, and the AWS console origin of that region. */
const SETTINGS_FORM = /^\s*(aws_region|aws_console)\s*\(\s*\)\s*$/;

/** The regions the data source can query (the regions resource). */
const REGIONS_FORM = /^\s*regions\s*\(\s*\)\s*$/;

/**
 * The AWS console's origin for a region, in the region's partition (China and GovCloud have
 * their own console hosts), so dashboards can link to the console from any series.
 */
export function consoleOrigin(region: string): string {
  const domain = region.startsWith('cn-')
    ? 'amazonaws.cn'
    : region.startsWith('us-gov-')
      ? 'amazonaws-us-gov.com'
      : 'aws.amazon.com';
  return `https://${region}.console.${domain}`;
}

/** The inventory forms, whose argument is a list of names, not PromQL. */
const INVENTORY_FORM = /^\s*(endpoints|inference_components)\s*\(([^()]*)\)\s*$/;

/** Whether a variable query lists names from the SageMaker inventory. */
export function isInventoryVariableQuery(query: string): boolean {
  return INVENTORY_FORM.test(query);
}

/**
 * Values that mean "any name" in an endpoint or IC filter: empty, a variable at All (as the
 * dashboards' allValue, or by name) and the usual wildcards.
 */
const ANY_NAME = new Set(['', '$__all', 'All', '.*', '.+', '*']);

/** The filter as the backend reads it: "" for any, else names joined by ",". */
export function nameFilter(value: string): string {
  const v = value.trim();
  return ANY_NAME.has(v) ? '' : v;
}

/** Splits at the last comma outside quotes, braces and parentheses (selector, label). */
function splitLastArg(args: string): [string, string] | [string] {
  let depth = 0;
  let last = -1;
  for (let i = 0; i < args.length; i++) {
    const c = args[i];
    const end = stringLiteralEnd(args, i);
    if (end !== i) {
      i = end;
    } else if (c === '{' || c === '(' || c === '[') {
      depth++;
    } else if (c === '}' || c === ')' || c === ']') {
      depth--;
    } else if (c === ',' && depth === 0) {
      last = i;
    }
  }
  return last < 0 ? [args.trim()] : [args.slice(0, last).trim(), args.slice(last + 1).trim()];
}

/** Parses the classic forms; throws an error naming the accepted forms otherwise. */
export function parseVariableQuery(query: string): ParsedVariableQuery {
  const settings = SETTINGS_FORM.exec(query);
  if (settings) {
    return { kind: settings[1] as 'aws_region' | 'aws_console' };
  }
  if (REGIONS_FORM.test(query)) {
    return { kind: 'regions' };
  }
  const inventory = INVENTORY_FORM.exec(query);
  if (inventory) {
    const [, fn, arg] = inventory;
    if (fn === 'endpoints') {
      if (arg.trim()) {
        throw new Error(
          `endpoints() takes no argument; to list the ICs of "${arg.trim()}" use inference_components(${arg.trim()}).`
        );
      }
      return { kind: 'endpoints' };
    }
    const endpoint = arg.trim();
    return endpoint ? { kind: 'inference_components', endpoint } : { kind: 'inference_components' };
  }
  const m = /^\s*(label_names|label_values|metrics|query_result)\s*\(([\s\S]*)\)\s*$/.exec(query);
  if (!m) {
    throw new Error(`Unsupported variable query "${query.trim()}": use ${FORMS}.`);
  }
  const [, fn, rawArgs] = m;
  const args = rawArgs.trim();
  switch (fn) {
    case 'label_names':
      return args ? { kind: 'label_names', match: args } : { kind: 'label_names' };
    case 'label_values': {
      const parts = splitLastArg(args);
      const label = unquoteName(parts[parts.length - 1]);
      if (!label) {
        throw new Error('label_values() needs a label name: label_values(metric, "aws.sagemaker.endpoint.name").');
      }
      return parts.length === 2 && parts[0]
        ? { kind: 'label_values', label, match: parts[0] }
        : { kind: 'label_values', label };
    }
    case 'metrics':
      return { kind: 'metrics', regex: args || '.*' };
    default:
      if (!args) {
        throw new Error('query_result() needs a PromQL expression: query_result(topk(5, vllm:num_requests_running)).');
      }
      return { kind: 'query_result', expr: args };
  }
}

/** The classic string for a parsed query; the structured editor writes this. */
export function formatVariableQuery(q: ParsedVariableQuery): string {
  switch (q.kind) {
    case 'label_names':
      return `label_names(${q.match ?? ''})`;
    case 'label_values':
      return q.match
        ? `label_values(${q.match}, ${quoteLabelArg(q.label)})`
        : `label_values(${quoteLabelArg(q.label)})`;
    case 'metrics':
      return `metrics(${q.regex})`;
    case 'query_result':
      return `query_result(${q.expr})`;
    case 'endpoints':
      return 'endpoints()';
    case 'inference_components':
      return `inference_components(${q.endpoint ?? ''})`;
    case 'aws_region':
    case 'aws_console':
    case 'regions':
      return `${q.kind}()`;
  }
}

function quoteLabelArg(label: string): string {
  return /^[a-zA-Z_][a-zA-Z0-9_]*$/.test(label) ? label : JSON.stringify(label);
}

/** Stored queries come as strings (old dashboards, dashboards as code) or as VariableQuery. */
export function toVariableQuery(stored: unknown, refId = 'variable'): VariableQuery {
  if (typeof stored === 'string') {
    return { refId, query: stored };
  }
  const q = (stored ?? {}) as Partial<VariableQuery>;
  return { ...q, refId: q.refId ?? refId, query: typeof q.query === 'string' ? q.query : '' };
}

function texts(values: string[]): MetricFindValue[] {
  return Array.from(new Set(values)).map((text) => ({ text }));
}

/** Prometheus-style one-line rendering of a query_result sample: name{labels} value timestamp. */
function sampleText(metric: Record<string, string>, value: [number, string]): string {
  const { __name__, ...labels } = metric;
  const pairs = Object.entries(labels).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return `${__name__ ?? ''}{${pairs.join(', ')}} ${value[1]} ${Math.round(value[0] * 1000)}`;
}

/** The message of a failed resource call: an Error, or Grafana's FetchError with the backend's body. */
function failureText(e: unknown): string {
  if (e instanceof Error) {
    return e.message;
  }
  const f = e as { data?: { error?: unknown; message?: unknown }; statusText?: unknown } | undefined;
  return String(f?.data?.error ?? f?.data?.message ?? f?.statusText ?? e);
}

/**
 * Asks each region once, in parallel (none named: the default region alone), and returns the
 * answers in region order. A region that fails fails the whole variable, naming every failed
 * region: a list silently missing a region's values would hide that region's resources, and
 * the backend's inventory resources decide the same way.
 */
async function inEachRegion<T>(
  resources: ResourceClient,
  regions: string[],
  ask: (client: ResourceClient) => Promise<T>
): Promise<T[]> {
  if (regions.length === 0) {
    return [await ask(resources)];
  }
  const answers = await Promise.allSettled(regions.map((r) => ask(resources.inRegion(r))));
  const failed = answers.flatMap((a, i) => {
    if (a.status === 'fulfilled') {
      return [];
    }
    const text = failureText(a.reason);
    // The backend names the region itself when it was asked about several.
    return [text.startsWith(`region ${regions[i]}:`) ? text : `region ${regions[i]}: ${text}`];
  });
  if (failed.length > 0) {
    throw new Error(failed.join('; '));
  }
  return answers.map((a) => (a as PromiseFulfilledResult<T>).value);
}

/** Names from one or several regions: one region's list as it came (sorted by the backend), several merged and sorted. */
async function namesInEachRegion(
  resources: ResourceClient,
  regions: string[],
  ask: (client: ResourceClient) => Promise<string[]>
): Promise<MetricFindValue[]> {
  const lists = await inEachRegion(resources, regions, ask);
  return texts(lists.length === 1 ? lists[0] : lists.flat().sort());
}

/**
 * Resolves an (already interpolated) variable query through the resource routes (or, for
 * aws_region() and aws_console(), from the data source's region); variables never run
 * through the query path. Metric regexes are applied here, because CloudWatch
 * refuses regex matchers on __name__. Every form but regions(), aws_region() and
 * aws_console() is asked in each of regions (empty = the default region) and the answers
 * are merged.
 */
export async function resolveVariableQuery(
  query: string,
  resources: ResourceClient,
  range?: TimeRange,
  region = '',
  regions: string[] = []
): Promise<MetricFindValue[]> {
  const q = parseVariableQuery(query);
  switch (q.kind) {
    case 'aws_region':
    case 'aws_console':
      if (!region.trim()) {
        throw new Error(`${q.kind}(): the data source has no Default region; set it in the data source settings.`);
      }
      return [{ text: q.kind === 'aws_region' ? region.trim() : consoleOrigin(region.trim()) }];
    case 'regions':
      return texts(await resources.regions());
    case 'endpoints':
      return namesInEachRegion(resources, regions, (c) => c.endpoints());
    case 'inference_components': {
      const endpoints = nameFilter(q.endpoint ?? '');
      return namesInEachRegion(resources, regions, (c) => c.inferenceComponents(endpoints ? endpoints.split(',') : []));
    }
    case 'label_names':
      return namesInEachRegion(resources, regions, (c) => c.labelNames(q.match ? [q.match] : [], range));
    case 'label_values':
      return namesInEachRegion(resources, regions, (c) => c.labelValues(q.label, q.match ? [q.match] : [], range));
    case 'metrics': {
      let re: RegExp;
      try {
        re = new RegExp(`^(?:${q.regex})$`);
      } catch (e) {
        throw new Error(`metrics(${q.regex}): invalid regular expression: ${(e as Error).message}`);
      }
      return namesInEachRegion(resources, regions, async (c) =>
        (await c.metricNames([], range)).filter((n) => re.test(n))
      );
    }
    case 'query_result': {
      const answers = await inEachRegion(resources, regions, (c) => c.instantQuery(q.expr, range));
      // Samples keep each region's order, regions in the order named.
      return texts(answers.flatMap((data) => resultTexts(q.expr, data)));
    }
  }
}

/** The values an instant query's result gives a variable: one per sample, or the scalar. */
function resultTexts(expr: string, data: PromQueryData): string[] {
  if (data.resultType === 'vector') {
    const samples = data.result as Array<{ metric: Record<string, string>; value: [number, string] }>;
    return samples.map((s) => sampleText(s.metric, s.value));
  }
  if (data.resultType === 'scalar' || data.resultType === 'string') {
    const [, v] = data.result as [number, string];
    return [String(v)];
  }
  throw new Error(`query_result(${expr}): a ${data.resultType} result cannot fill a variable; use an instant vector.`);
}
