import { LabelMatcher } from '../promql/names';
import { metricInfo } from './catalog';

// The query builder's model: a chain of operands joined left to right by binary operators,
// each operand a number (or template variable) or a pipeline over one metric:
//   histogram_quantile(q, agg by (labels) (fn(metric{matchers}[window])))
// (or histogram_avg/count/sum in place of histogram_quantile)
// with every stage but the selector optional. render.ts writes it, parse.ts reads it back.

export type RangeFn =
  | 'rate'
  | 'increase'
  | 'sum_over_time'
  | 'avg_over_time'
  | 'max_over_time'
  | 'min_over_time'
  | 'count_over_time'
  | 'last_over_time';

export const RANGE_FNS: readonly RangeFn[] = [
  'rate',
  'increase',
  'sum_over_time',
  'avg_over_time',
  'max_over_time',
  'min_over_time',
  'count_over_time',
  'last_over_time',
];

/** Native-histogram functions besides histogram_quantile; histogram_avg is CloudWatch's advice for vended latencies without buckets. */
export type HistogramFn = 'histogram_avg' | 'histogram_count' | 'histogram_sum';

export const HISTOGRAM_FNS: readonly HistogramFn[] = ['histogram_avg', 'histogram_count', 'histogram_sum'];

export type AggOp = 'sum' | 'avg' | 'max' | 'min' | 'count' | 'topk' | 'bottomk' | 'quantile';

export const AGG_OPS: readonly AggOp[] = ['sum', 'avg', 'max', 'min', 'count', 'topk', 'bottomk', 'quantile'];

/** Aggregations that take a number first: topk(k, …), quantile(φ, …). */
export function aggTakesParam(op: AggOp): boolean {
  return op === 'topk' || op === 'bottomk' || op === 'quantile';
}

export type BinaryOp = '+' | '-' | '*' | '/' | '%' | '==' | '!=' | '>' | '<' | '>=' | '<=' | 'and' | 'or' | 'unless';

/** PromQL precedence; higher binds tighter (^ and atan2 are left to Code). */
export const PRECEDENCE: Record<BinaryOp, number> = {
  '*': 5,
  '/': 5,
  '%': 5,
  '+': 4,
  '-': 4,
  '==': 3,
  '!=': 3,
  '>': 3,
  '<': 3,
  '>=': 3,
  '<=': 3,
  and: 2,
  unless: 2,
  or: 1,
};

export const BINARY_OPS = Object.keys(PRECEDENCE) as BinaryOp[];

export interface Pipeline {
  type: 'pipeline';
  metric: string;
  /**
   * Further metrics read with the same filters and function, joined by `or` under the
   * aggregation: the vLLM/SGLang pairs (`sum (rate(vllm:x[w]) or rate(sglang:x[w]))`).
   */
  alternatives?: string[];
  matchers: LabelMatcher[];
  /** fn(selector[window]); window is a duration or a variable such as $__rate_interval. */
  range?: { fn: RangeFn; window: string };
  agg?: { op: AggOp; by: string[]; without?: boolean; param?: string };
  /** histogram_quantile(quantile, …): a number or a variable such as $percentile. */
  quantile?: string;
  /** Or one of the other native-histogram readings (never with a quantile). */
  histogramFn?: HistogramFn;
}

/** A number literal or a template variable standing for one, kept as written. */
export interface NumberOperand {
  type: 'number';
  value: string;
}

/** A parenthesised chain on the right of an operator: `100 * (1 - avg (…))`, `a / (b + c)`. */
export interface GroupOperand {
  type: 'group';
  query: BuilderQuery;
}

/** What may start a chain; a group there would be the chain itself. */
export type Term = Pipeline | NumberOperand;

export type Operand = Term | GroupOperand;

export interface BuilderQuery {
  first: Term;
  rest: Array<{ op: BinaryOp; operand: Operand }>;
}

export function emptyPipeline(metric = ''): Pipeline {
  return { type: 'pipeline', metric, matchers: [] };
}

/**
 * The range functions that mean something for a metric: never rate/increase on delta
 * (vended) metrics, whose samples are already per-interval amounts; rate/increase for
 * cumulative counters and histograms; *_over_time for gauges. Unknown metrics get all.
 */
export function rangeFnsFor(metric: string): readonly RangeFn[] {
  const info = metricInfo(metric);
  if (!info) {
    return RANGE_FNS;
  }
  if (info.temporality === 'delta') {
    return info.type === 'histogram' ? ['sum_over_time'] : RANGE_FNS.filter((f) => f.endsWith('_over_time'));
  }
  if (info.type === 'gauge') {
    return RANGE_FNS.filter((f) => f.endsWith('_over_time'));
  }
  return ['rate', 'increase'];
}

/** histogram_quantile applies to (native) histograms, and to metrics the catalog does not know. */
export function takesQuantile(metric: string): boolean {
  const info = metricInfo(metric);
  return !info || info.type === 'histogram';
}

/** The pipeline a freshly picked metric starts with: the usual reading for its kind. */
export function defaultPipeline(metric: string, matchers: Pipeline['matchers'] = []): Pipeline {
  const info = metricInfo(metric);
  const p: Pipeline = { type: 'pipeline', metric, matchers };
  if (!info || info.type === 'gauge') {
    return p;
  }
  const fn = rangeFnsFor(metric)[0];
  p.range = { fn, window: fn === 'sum_over_time' ? '$__interval' : '$__rate_interval' };
  if (info.type === 'histogram') {
    p.agg = { op: 'sum', by: [] };
    p.quantile = '0.99';
  }
  return p;
}

/**
 * Why a model is not a query the builder stands behind (undefined when it is): the rules
 * the editor's choices follow, checked again for queries read from Code.
 */
export function checkQuery(q: BuilderQuery): string | undefined {
  const pipelines = pipelinesOf(q);
  if (pipelines.length === 0) {
    return 'no metric: CloudWatch needs a metric name in every query';
  }
  for (const p of pipelines) {
    const why = checkPipeline(p);
    if (why) {
      return why;
    }
  }
  return undefined;
}

/** Every pipeline of a query, groups included, left to right. */
export function pipelinesOf(q: BuilderQuery): Pipeline[] {
  return [q.first, ...q.rest.map((r) => r.operand)].flatMap((o) =>
    o.type === 'pipeline' ? [o] : o.type === 'group' ? pipelinesOf(o.query) : []
  );
}

function checkPipeline(p: Pipeline): string | undefined {
  if (!p.metric) {
    return 'a selector without a metric name (CloudWatch refuses it)';
  }
  if (p.quantile !== undefined && p.histogramFn) {
    return `histogram_quantile and ${p.histogramFn} at once`;
  }
  if (p.alternatives?.length && !p.agg) {
    return 'metrics joined by or without an aggregation around them';
  }
  for (const metric of [p.metric, ...(p.alternatives ?? [])]) {
    const info = metricInfo(metric);
    if (p.range && !rangeFnsFor(metric).includes(p.range.fn)) {
      if (info?.temporality === 'delta') {
        return `${p.range.fn}() on ${metric}, a delta metric: use sum_over_time`;
      }
      return `${p.range.fn}() does not apply to ${metric} (a ${info?.temporality} ${info?.type})`;
    }
    const histogramFn = p.quantile !== undefined ? 'histogram_quantile' : p.histogramFn;
    if (histogramFn && !takesQuantile(metric)) {
      return `${histogramFn} over ${metric}, which is a ${info?.type}, not a histogram`;
    }
  }
  return undefined;
}
