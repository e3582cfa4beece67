import { labelNameToken, selector } from '../promql/names';
import { BinaryOp, BuilderQuery, Operand, Pipeline, PRECEDENCE } from './model';

// Writes the builder model as PromQL in one spelling, the dashboards' (pkg/promqlexpr):
//   agg by (a, "b.c") (inner)   agg (inner)   topk by (a) (5, inner)
//   fn(metric{"dotted.label"=~"v", plain="w"}[window])   histogram_quantile(q, inner)
//   a / b   (a or b) / c   — parentheses only where precedence needs them.

export function renderPipeline(p: Pipeline): string {
  if (!p.metric) {
    return '';
  }
  // A filter row still without a label name is the editor's, not the query's.
  let out = selector(
    p.metric,
    p.matchers.filter((m) => m.name !== ''),
    ', '
  );
  if (p.range) {
    out = `${p.range.fn}(${out}[${p.range.window}])`;
  }
  if (p.agg) {
    const { op, by, without, param } = p.agg;
    const grouping = by.length ? ` ${without ? 'without' : 'by'} (${by.map(labelNameToken).join(', ')})` : '';
    out = `${op}${grouping} (${param !== undefined ? `${param}, ` : ''}${out})`;
  }
  if (p.quantile !== undefined) {
    out = `histogram_quantile(${p.quantile}, ${out})`;
  }
  return out;
}

function renderOperand(o: Operand): string {
  return o.type === 'number' ? o.value : renderPipeline(o);
}

export function render(q: BuilderQuery): string {
  let out = renderOperand(q.first);
  let last: BinaryOp | undefined;
  for (const { op, operand } of q.rest) {
    // The chain is evaluated left to right; what came before needs parentheses when it ends
    // in an operator that binds less tightly than this one.
    if (last && PRECEDENCE[last] < PRECEDENCE[op]) {
      out = `(${out})`;
    }
    out = `${out} ${op} ${renderOperand(operand)}`;
    last = op;
  }
  return out;
}
