import { labelNameToken, selector } from '../promql/names';
import { BinaryOp, BuilderQuery, Operand, Pipeline, PRECEDENCE } from './model';

// Writes the builder model as PromQL in one spelling, the dashboards' (pkg/promqlexpr):
//   agg by (a, "b.c") (inner)   agg (inner)   topk by (a) (5, inner)
//   fn(metric{"dotted.label"=~"v", plain="w"}[window])   histogram_quantile(q, inner)
//   agg (fn(vllm:x{…}[w]) or fn(sglang:x{…}[w]))   (alternatives: an engine pair)
//   a / b   (a or b) / c   a / (b + c)   1 - a / b   — parentheses only where precedence
//   needs them.

function renderRead(p: Pipeline, metric: string): string {
  // A filter row still without a label name is the editor's, not the query's.
  const out = selector(
    metric,
    p.matchers.filter((m) => m.name !== ''),
    ', '
  );
  return p.range ? `${p.range.fn}(${out}[${p.range.window}])` : out;
}

export function renderPipeline(p: Pipeline): string {
  if (!p.metric) {
    return '';
  }
  let out = [p.metric, ...(p.alternatives ?? []).filter(Boolean)].map((m) => renderRead(p, m)).join(' or ');
  if (p.agg) {
    const { op, by, without, param } = p.agg;
    // `by ()` is the same as no grouping, but `without ()` keeps every label: it stays.
    const grouping =
      by.length || without ? ` ${without ? 'without' : 'by'} (${by.map(labelNameToken).join(', ')})` : '';
    out = `${op}${grouping} (${param !== undefined ? `${param}, ` : ''}${out})`;
  }
  if (p.quantile !== undefined) {
    out = `histogram_quantile(${p.quantile}, ${out})`;
  } else if (p.histogramFn) {
    out = `${p.histogramFn}(${out})`;
  }
  return out;
}

function renderOperand(o: Operand, op: BinaryOp): string {
  switch (o.type) {
    case 'number':
      return o.value;
    case 'group': {
      // On the right of an operator, a group binding less tightly (or as tightly: operators
      // group left to right) needs its parentheses; one binding tighter does not.
      const inner = render(o.query);
      const top = o.query.rest[o.query.rest.length - 1]?.op;
      return !inner || (top && PRECEDENCE[top] > PRECEDENCE[op]) ? inner : `(${inner})`;
    }
    default:
      return renderPipeline(o);
  }
}

export function render(q: BuilderQuery): string {
  let out = q.first.type === 'number' ? q.first.value : renderPipeline(q.first);
  let last: BinaryOp | undefined;
  for (const { op, operand } of q.rest) {
    const text = renderOperand(operand, op);
    // Operands still being filled in (no metric yet) are left out, so the text stays a query.
    if (!text || !out) {
      out ||= text;
      continue;
    }
    // The chain is evaluated left to right; what came before needs parentheses when it ends
    // in an operator that binds less tightly than this one.
    if (last && PRECEDENCE[last] < PRECEDENCE[op]) {
      out = `(${out})`;
    }
    out = `${out} ${op} ${text}`;
    last = op;
  }
  return out;
}
