import { SyntaxNode } from '@lezer/common';
import { parser } from '@prometheus-io/lezer-promql';

import { maskTemplateVariables } from '../promql/lint';
import { LabelMatcher, MatchOp, unquoteString } from '../promql/names';
import {
  AGG_OPS,
  AggOp,
  aggTakesParam,
  BINARY_OPS,
  BinaryOp,
  BuilderQuery,
  checkQuery,
  HISTOGRAM_FNS,
  HistogramFn,
  Operand,
  Pipeline,
  RANGE_FNS,
  RangeFn,
  Term,
} from './model';

// Reads PromQL into the builder model with the PromQL grammar the code editor uses
// (@prometheus-io/lezer-promql). Anything outside the model is refused with a short reason,
// and the query stays in Code. Spellings the model does not keep (single quotes, `sum(x) by
// (a)`, __name__="m", redundant parentheses, spacing) are read, and render.ts writes them in
// its one spelling; parse(render(m)) gives m back.

export type ParseResult = { ok: true; query: BuilderQuery } | { ok: false; reason: string };

class Refusal extends Error {}

function refuse(reason: string): never {
  throw new Refusal(reason);
}

const VARIABLE = /^(\$\w+|\$\{[^}]*\}|\[\[[^\]]*\]\])$/;
const DURATION = /^(\d+(ms|s|m|h|d|w|y))+$/;

/** What the builder cannot write, by grammar node, said briefly. */
const UNSUPPORTED: Record<string, string> = {
  OffsetExpr: 'an offset modifier',
  SubqueryExpr: 'a subquery ([range:step])',
  StepInvariantExpr: 'an @ modifier',
  UnaryExpr: 'a unary minus',
  StringLiteral: 'a string expression',
  MatrixSelector: 'a range selector outside a function',
  BinaryExpr: 'an operation inside a function',
  AggregateExpr: 'an aggregation inside another operation',
};

/** Whether the builder can write text as a range window: a duration or a template variable. */
export function isWindow(text: string): boolean {
  return DURATION.test(text) || VARIABLE.test(text);
}

/** Whether the builder can write text where a number goes: a number literal or a template variable. */
export function isNumber(text: string): boolean {
  if (VARIABLE.test(text)) {
    return true;
  }
  const top = parser.parse(text).topNode.firstChild;
  return top?.name === 'NumberDurationLiteral' && top.from === 0 && top.to === text.length;
}

export function parse(expr: string): ParseResult {
  if (expr.trim() === '') {
    return { ok: false, reason: 'empty query' };
  }
  // Grafana variables are not PromQL: the grammar sees same-length stand-ins, and every
  // name and number is read from the original text by position.
  const masked = maskTemplateVariables(expr);
  const tree = parser.parse(masked);
  let error: number | undefined;
  let comment = false;
  tree.iterate({
    enter: (n) => {
      if (n.type.isError && error === undefined) {
        error = n.from;
      }
      // The model has no place for comments, and in a list the grammar puts them among the items.
      comment ||= n.name === 'LineComment';
    },
  });
  if (error !== undefined) {
    return { ok: false, reason: `the query does not parse (at character ${error + 1})` };
  }
  if (comment) {
    return { ok: false, reason: 'a comment (the builder would drop it)' };
  }
  const text = (n: SyntaxNode) => expr.slice(n.from, n.to);
  try {
    const top = tree.topNode.firstChild;
    if (!top) {
      return { ok: false, reason: 'empty query' };
    }
    const query = new Reader(text).chain(top);
    const why = checkQuery(query);
    return why ? { ok: false, reason: why } : { ok: true, query };
  } catch (e) {
    if (e instanceof Refusal) {
      return { ok: false, reason: e.message };
    }
    throw e;
  }
}

function children(n: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  for (let c = n.firstChild; c; c = c.nextSibling) {
    out.push(c);
  }
  return out;
}

function unparen(n: SyntaxNode): SyntaxNode {
  while (n.name === 'ParenExpr' && n.firstChild) {
    n = n.firstChild;
  }
  return n;
}

class Reader {
  constructor(private readonly text: (n: SyntaxNode) => string) {}

  chain(node: SyntaxNode): BuilderQuery {
    const n = unparen(node);
    if (n.name !== 'BinaryExpr') {
      return { first: this.term(n), rest: [] };
    }
    const [left, opNode, ...more] = children(n);
    const right = more[more.length - 1];
    if (more.some((c) => c.name === 'MatchingModifierClause')) {
      refuse('vector matching (on/ignoring/group_left) in a binary operation');
    }
    if (more.some((c) => c.name === 'BoolModifier')) {
      refuse('a bool modifier on a comparison');
    }
    const op = this.text(opNode).toLowerCase() as BinaryOp;
    if (!BINARY_OPS.includes(op)) {
      refuse(`the ${this.text(opNode)} operator`);
    }
    const r = unparen(right);
    // An operation on the right is a group: the builder writes it in parentheses.
    const operand: Operand = r.name === 'BinaryExpr' ? { type: 'group', query: this.chain(r) } : this.term(r);
    const head = this.chain(left);
    return { first: head.first, rest: [...head.rest, { op, operand }] };
  }

  private term(n: SyntaxNode): Term {
    const number = this.number(n);
    return number ? { type: 'number', value: number } : this.pipeline(n);
  }

  /** A number literal or a template variable in a number's place, as written. */
  private number(n: SyntaxNode): string | undefined {
    const t = this.text(n);
    if (n.name === 'NumberDurationLiteral' || (n.name === 'VectorSelector' && VARIABLE.test(t))) {
      return t;
    }
    return undefined;
  }

  private pipeline(n: SyntaxNode): Pipeline {
    if (n.name === 'FunctionCall' && this.functionName(n) === 'histogram_quantile') {
      const [q, inner] = this.args(n, 2, 'histogram_quantile');
      const quantile =
        this.number(q) ?? refuse('histogram_quantile with a quantile that is not a number or a variable');
      if (inner.name === 'BinaryExpr') {
        refuse('an operation inside histogram_quantile()');
      }
      const p = this.aggregated(inner);
      return { ...p, quantile };
    }
    const fn = n.name === 'FunctionCall' ? this.functionName(n) : '';
    if (HISTOGRAM_FNS.includes(fn as HistogramFn)) {
      const [inner] = this.args(n, 1, fn);
      if (inner.name === 'BinaryExpr') {
        refuse(`an operation inside ${fn}()`);
      }
      return { ...this.aggregated(inner), histogramFn: fn as HistogramFn };
    }
    return this.aggregated(n);
  }

  private aggregated(n: SyntaxNode): Pipeline {
    if (n.name !== 'AggregateExpr') {
      return this.ranged(n);
    }
    const opText = this.text(n.getChild('AggregateOp')!).toLowerCase();
    const op = AGG_OPS.includes(opText as AggOp) ? (opText as AggOp) : refuse(`the ${opText} aggregation`);
    const modifier = n.getChild('AggregateModifier');
    const by = modifier ? this.groupingLabels(modifier) : [];
    const without = modifier?.getChild('Without') ? true : undefined;
    const body = n.getChild('FunctionCallBody')!;
    const args = children(body);
    let param: string | undefined;
    if (aggTakesParam(op)) {
      if (args.length !== 2) {
        refuse(`${op} without its number`);
      }
      param = this.number(args[0]) ?? refuse(`${op} with a parameter that is not a number or a variable`);
    } else if (args.length !== 1) {
      refuse(`${op} with ${args.length} arguments`);
    }
    const inner = unparen(args[args.length - 1]);
    if (inner.name === 'AggregateExpr') {
      refuse('an aggregation of an aggregation');
    }
    const innerFn = inner.name === 'FunctionCall' ? this.functionName(inner) : '';
    if (innerFn === 'histogram_quantile' || HISTOGRAM_FNS.includes(innerFn as HistogramFn)) {
      refuse(`an aggregation over ${innerFn}`);
    }
    const p = inner.name === 'BinaryExpr' ? this.alternatives(inner, op) : this.ranged(inner);
    const agg: NonNullable<Pipeline['agg']> = { op, by };
    if (without) {
      agg.without = true;
    }
    if (param !== undefined) {
      agg.param = param;
    }
    return { ...p, agg };
  }

  /** `f(a{m}[w]) or f(b{m}[w]) …` under an aggregation: one pipeline with alternatives. */
  private alternatives(n: SyntaxNode, where: string): Pipeline {
    const reads: Pipeline[] = [];
    const walk = (x: SyntaxNode) => {
      x = unparen(x);
      if (x.name !== 'BinaryExpr') {
        reads.push(this.ranged(x));
        return;
      }
      const [left, opNode, ...more] = children(x);
      const op = this.text(opNode).toLowerCase();
      if (op !== 'or' || more.length !== 1) {
        refuse(`the ${op} operator${more.length > 1 ? ' with a modifier' : ''} inside ${where}()`);
      }
      walk(left);
      walk(more[0]);
    };
    walk(n);
    const [first, ...rest] = reads;
    const same = (a: Pipeline, b: Pipeline) =>
      JSON.stringify([a.matchers, a.range]) === JSON.stringify([b.matchers, b.range]);
    if (!rest.every((r) => same(first, r))) {
      refuse(`metrics joined by or inside ${where}() with different filters or functions`);
    }
    return { ...first, alternatives: rest.map((r) => r.metric) };
  }

  private groupingLabels(modifier: SyntaxNode): string[] {
    const labels = modifier.getChild('GroupingLabels');
    return labels ? children(labels).map((l) => this.labelName(l)) : [];
  }

  private labelName(n: SyntaxNode): string {
    const t = this.text(n);
    // A formatted variable may stand for several names (csv); quoting would make them one.
    if (n.name !== 'QuotedLabelName' && /^\$\{[^}]*:[^}]*\}$/.test(t)) {
      refuse(`a variable with a format (${t}) as a label name: the builder writes label variables quoted`);
    }
    return n.name === 'QuotedLabelName' ? unquoteString(t) : t;
  }

  private ranged(n: SyntaxNode): Pipeline {
    if (n.name !== 'FunctionCall') {
      return this.selector(n);
    }
    const fn = this.functionName(n);
    if (!RANGE_FNS.includes(fn as RangeFn)) {
      if (fn === 'histogram_quantile' || HISTOGRAM_FNS.includes(fn as HistogramFn)) {
        refuse(`${fn} inside an aggregation or function (the builder writes it outermost)`);
      }
      refuse(`${fn}() is not a builder operation`);
    }
    const [arg] = this.args(n, 1, fn);
    if (arg.name !== 'MatrixSelector') {
      refuse(UNSUPPORTED[arg.name] ? `${UNSUPPORTED[arg.name]} inside ${fn}()` : `${fn}() of an expression`);
    }
    const sel = arg.getChild('VectorSelector')!;
    // The window is read from the original text: the grammar saw variables as stand-ins.
    const all = this.text(arg);
    const window = all.slice(all.lastIndexOf('[') + 1, -1).trim();
    if (!DURATION.test(window) && !VARIABLE.test(window)) {
      refuse(`a range window the builder does not write: [${window}]`);
    }
    return { ...this.selector(sel), range: { fn: fn as RangeFn, window } };
  }

  private selector(n: SyntaxNode): Pipeline {
    if (n.name !== 'VectorSelector') {
      if (n.name === 'FunctionCall') {
        refuse(`${this.functionName(n)}() is not a builder operation`);
      }
      refuse(UNSUPPORTED[n.name] ?? `${n.name} is not a builder operation`);
    }
    let metric = '';
    const id = n.getChild('Identifier');
    if (id) {
      metric = this.text(id);
    }
    const matchers: LabelMatcher[] = [];
    const list = n.getChild('LabelMatchers');
    for (const m of list ? children(list) : []) {
      if (m.name === 'QuotedLabelName') {
        // {"dotted.metric", …}: the metric name as a bare string.
        metric = metric ? refuse('two metric names in one selector') : unquoteString(this.text(m));
        continue;
      }
      const name = this.labelName(m.firstChild!);
      const op = this.text(m.getChild('MatchOp')!) as MatchOp;
      const value = unquoteString(this.text(m.getChild('StringLiteral')!));
      if (name === '__name__' && op === '=' && !metric) {
        metric = value;
      } else if (name === '__name__') {
        refuse('a __name__ matcher other than one metric name');
      } else {
        matchers.push({ name, op, value });
      }
    }
    if (!metric) {
      refuse('a selector without a metric name (CloudWatch refuses it)');
    }
    // However it is spelled ($m, __name__="$m", {"$m"}): the builder cannot tell its kind.
    if (VARIABLE.test(metric)) {
      refuse('a template variable as the metric name');
    }
    if (/\$|\[\[/.test(metric)) {
      refuse('a template variable in the metric name');
    }
    return { type: 'pipeline', metric, matchers };
  }

  private functionName(n: SyntaxNode): string {
    return this.text(n.getChild('FunctionIdentifier')!);
  }

  private args(n: SyntaxNode, count: number, fn: string): SyntaxNode[] {
    const args = children(n.getChild('FunctionCallBody')!).map(unparen);
    if (args.length !== count) {
      refuse(`${fn}() with ${args.length} arguments`);
    }
    return args;
  }
}
