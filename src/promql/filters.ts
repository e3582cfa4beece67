import { SyntaxNode } from '@lezer/common';
import { parser } from '@prometheus-io/lezer-promql';

import table from '../semconv.json';
import { maskTemplateVariables } from './lint';
import { LabelMatcher, labelNameToken, MatchOp, quoteString, unquoteString } from './names';

// Adds, removes and finds label matchers in the series selectors of a PromQL expression,
// for ad-hoc filters and Explore's filter for/out. Selectors are found with the PromQL
// grammar (@prometheus-io/lezer-promql); every edit is an insertion or a cut at a grammar
// node's position, so the rest of the text stays as the user wrote it.

const familyLabels = new Map(table.families.map((f) => [f.id, new Set(f.labels)]));
const metricFamily = new Map(table.metrics.map((m) => [m.name, m.family]));

/**
 * Whether a selector of metric may carry label: a catalog metric carries the labels its family
 * lists (src/semconv.json); a metric the catalog does not know (a custom OTLP metric, a
 * template variable) or a selector without a name may carry any label.
 */
export function metricCarriesLabel(metric: string | undefined, label: string): boolean {
  const family = metric === undefined ? undefined : metricFamily.get(metric);
  return family === undefined || familyLabels.get(family)?.has(label) === true;
}

const OPS: Record<string, MatchOp> = { EqlSingle: '=', Neq: '!=', EqlRegex: '=~', NeqRegex: '!~' };

/** One item between a selector's braces: a matcher, or the quoted metric name ({"vllm:x"}). */
interface Item {
  node: SyntaxNode;
  matcher?: LabelMatcher;
}

interface Selector {
  /** The metric name, when the selector names one (bare, quoted or __name__="…"). */
  metric?: string;
  /** The bare metric name's node, where braces go when there are none. */
  identifier?: SyntaxNode;
  braces?: SyntaxNode;
  items: Item[];
}

function readMatcher(node: SyntaxNode, text: string): LabelMatcher | undefined {
  const name = node.getChild('LabelName') ?? node.getChild('QuotedLabelName');
  const op = node.getChild('MatchOp')?.firstChild;
  const value = node.getChild('StringLiteral');
  if (!name || !op || !value || !(op.name in OPS)) {
    return undefined;
  }
  const nameText = text.slice(name.from, name.to);
  return {
    name: name.name === 'QuotedLabelName' ? unquoteString(nameText) : nameText,
    op: OPS[op.name],
    value: unquoteString(text.slice(value.from, value.to)),
  };
}

/** The selectors of expr, or undefined when expr does not parse. */
function selectors(expr: string): Selector[] | undefined {
  // Grafana variables are not PromQL: the grammar sees same-length stand-ins, and names and
  // values are read from the original text by position.
  const tree = parser.parse(maskTemplateVariables(expr));
  let broken = false;
  const out: Selector[] = [];
  tree.iterate({
    enter: (n) => {
      if (n.type.isError) {
        broken = true;
      }
      if (n.name !== 'VectorSelector') {
        return;
      }
      const node = n.node;
      const identifier = node.getChild('Identifier') ?? undefined;
      const braces = node.getChild('LabelMatchers') ?? undefined;
      const sel: Selector = { identifier, braces, items: [] };
      if (identifier) {
        sel.metric = expr.slice(identifier.from, identifier.to);
      }
      for (let c = braces?.firstChild; c; c = c.nextSibling) {
        if (c.name === 'QuotedLabelName') {
          sel.metric = unquoteString(expr.slice(c.from, c.to));
          sel.items.push({ node: c });
        } else if (c.name === 'UnquotedLabelMatcher' || c.name === 'QuotedLabelMatcher') {
          const matcher = readMatcher(c, expr);
          if (matcher?.name === '__name__' && matcher.op === '=') {
            sel.metric = matcher.value;
          }
          sel.items.push({ node: c, matcher });
        }
      }
      out.push(sel);
      return false;
    },
  });
  return broken ? undefined : out;
}

/** Whether expr parses as PromQL, so that matchers can be placed in it. */
export function parses(expr: string): boolean {
  return selectors(expr) !== undefined;
}

function same(a: LabelMatcher | undefined, b: LabelMatcher): boolean {
  return a !== undefined && a.name === b.name && a.op === b.op && a.value === b.value;
}

function matcherText(m: LabelMatcher): string {
  return `${labelNameToken(m.name)}${m.op}${quoteString(m.value)}`;
}

/** Whether some selector of expr has exactly this matcher. */
export function hasMatcher(expr: string, m: LabelMatcher): boolean {
  return (selectors(expr) ?? []).some((s) => s.items.some((i) => same(i.matcher, m)));
}

/**
 * Adds the matcher to every selector whose metric may carry its label (metricCarriesLabel, or
 * carries) and that does not have it yet. An expression that does not parse comes back unchanged.
 */
export function addMatcher(expr: string, m: LabelMatcher, carries = metricCarriesLabel): string {
  const edits: Array<{ at: number; text: string }> = [];
  for (const s of selectors(expr) ?? []) {
    if (!carries(s.metric, m.name) || s.items.some((i) => same(i.matcher, m))) {
      continue;
    }
    const last = s.items[s.items.length - 1];
    if (last) {
      edits.push({ at: last.node.to, text: `, ${matcherText(m)}` });
    } else if (s.braces) {
      edits.push({ at: s.braces.from + 1, text: matcherText(m) });
    } else if (s.identifier) {
      edits.push({ at: s.identifier.to, text: `{${matcherText(m)}}` });
    }
  }
  let out = expr;
  for (const e of edits.sort((a, b) => b.at - a.at)) {
    out = out.slice(0, e.at) + e.text + out.slice(e.at);
  }
  return out;
}

/** The cut that removes one matcher of a selector with its comma; undefined when none may go. */
function cut(s: Selector, index: number): [number, number] | undefined {
  const item = s.items[index].node;
  const next = s.items[index + 1]?.node;
  const prev = s.items[index - 1]?.node;
  if (next) {
    return [item.from, next.from];
  }
  if (prev) {
    return [prev.to, item.to];
  }
  // The only matcher: with a bare name the braces go too; a nameless selector keeps it,
  // since `{}` is not a valid selector.
  return s.identifier && s.braces ? [s.braces.from, s.braces.to] : undefined;
}

/** Removes the matcher from every selector that has it (but never a nameless selector's last one). */
export function removeMatcher(expr: string, m: LabelMatcher): string {
  let out = expr;
  // One cut per pass, then the text is read again: positions after a cut are not reused.
  for (;;) {
    const found = (selectors(out) ?? [])
      .map((s) => ({ s, i: s.items.findIndex((it) => same(it.matcher, m)) }))
      .filter(({ i }) => i >= 0)
      .map(({ s, i }) => cut(s, i))
      .find((c) => c !== undefined);
    if (!found) {
      return out;
    }
    out = out.slice(0, found[0]) + out.slice(found[1]);
  }
}

/** A value as a literal inside a regex matcher (RE2 syntax). */
export function regexLiteral(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A Grafana ad-hoc filter (AdHocVariableFilter) as far as this module reads it. */
export interface AdHocFilter {
  key: string;
  operator: string;
  value: string;
  values?: string[];
}

/**
 * The matcher an ad-hoc filter stands for: =, !=, =~ and !~ as written; Grafana's multi-value
 * =| and !=| as a regex alternation of the literal values. undefined for operators PromQL
 * matchers cannot express (<, >).
 */
export function filterMatcher(f: AdHocFilter): LabelMatcher | undefined {
  switch (f.operator) {
    case '=':
    case '!=':
    case '=~':
    case '!~':
      return { name: f.key, op: f.operator, value: f.value };
    case '=|':
    case '!=|': {
      const values = f.values?.length ? f.values : [f.value];
      return { name: f.key, op: f.operator === '=|' ? '=~' : '!~', value: values.map(regexLiteral).join('|') };
    }
  }
  return undefined;
}

/** The result of applying ad-hoc filters: the expression and the filters it could not take. */
export interface Filtered {
  expr: string;
  unsupported: AdHocFilter[];
}

/** Adds every filter's matcher to the selectors of the metrics that may carry its label. */
export function applyFilters(expr: string, filters: AdHocFilter[]): Filtered {
  const unsupported: AdHocFilter[] = [];
  let out = expr;
  for (const f of filters) {
    const m = filterMatcher(f);
    if (m && f.key !== '') {
      out = addMatcher(out, m);
    } else {
      unsupported.push(f);
    }
  }
  return { expr: out, unsupported };
}

/**
 * Adds a matcher on a label a result series carries (Explore's filter for/out): where the
 * catalog says no selector's metric carries it, the catalog is incomplete for this data, and
 * every selector gets it, as Prometheus does.
 */
export function addResultMatcher(expr: string, m: LabelMatcher): string {
  const out = addMatcher(expr, m);
  return out !== expr || hasMatcher(expr, m) ? out : addMatcher(expr, m, () => true);
}

/**
 * Filter for (=) or out (!=) a label value, as Explore's table cells and legends ask: the same
 * matcher present is removed (a toggle), the opposite one is replaced.
 */
export function toggleMatcher(expr: string, name: string, value: string, out: boolean): string {
  const wanted: LabelMatcher = { name, op: out ? '!=' : '=', value };
  const opposite: LabelMatcher = { name, op: out ? '=' : '!=', value };
  if (hasMatcher(expr, wanted)) {
    return removeMatcher(expr, wanted);
  }
  return addResultMatcher(removeMatcher(expr, opposite), wanted);
}
