import { LabelMatcher } from '../promql/names';
import { metricInfo } from './catalog';

// The query builder's model: a chain of operands joined left to right by binary operators,
// each operand a number (or template variable) or a pipeline over one metric:
//   histogram_quantile(q, agg by (labels) (fn(metric{matchers}[window])))
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
  matchers: LabelMatcher[];
  /** fn(selector[window]); window is a duration or a variable such as $__rate_interval. */
  range?: { fn: RangeFn; window: string };
  agg?: { op: AggOp; by: string[]; without?: boolean; param?: string };
  /** histogram_quantile(quantile, …): a number or a variable such as $percentile. */
  quantile?: string;
}

/** A number literal or a template variable standing for one, kept as written. */
export interface NumberOperand {
  type: 'number';
  value: string;
}

export type Operand = Pipeline | NumberOperand;

export interface BuilderQuery {
  first: Operand;
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
  const operands = [q.first, ...q.rest.map((r) => r.operand)];
  if (!operands.some((o) => o.type === 'pipeline')) {
    return 'no metric: CloudWatch needs a metric name in every query';
  }
  for (const o of operands) {
    const why = o.type === 'pipeline' ? checkPipeline(o) : undefined;
    if (why) {
      return why;
    }
  }
  return undefined;
}

function checkPipeline(p: Pipeline): string | undefined {
  if (!p.metric) {
    return 'a selector without a metric name (CloudWatch refuses it)';
  }
  const info = metricInfo(p.metric);
  if (p.range && !rangeFnsFor(p.metric).includes(p.range.fn)) {
    if (info?.temporality === 'delta') {
      return `${p.range.fn}() on ${p.metric}, a delta metric: use sum_over_time`;
    }
    return `${p.range.fn}() does not apply to ${p.metric} (a ${info?.temporality} ${info?.type})`;
  }
  if (p.quantile !== undefined && !takesQuantile(p.metric)) {
    return `histogram_quantile over ${p.metric}, which is a ${info?.type}, not a histogram`;
  }
  return undefined;
}
