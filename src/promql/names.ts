// Quoting rules for PromQL names. CloudWatch's OTLP-derived labels contain dots and '@'
// ("aws.sagemaker.endpoint.name", "@resource.host.id"); Prometheus 3 syntax accepts them only
// double-quoted, and the underscore spelling silently matches nothing.

const LEGACY_LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const LEGACY_METRIC = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

export function isLegacyLabelName(name: string): boolean {
  return LEGACY_LABEL.test(name);
}

export function isLegacyMetricName(name: string): boolean {
  return LEGACY_METRIC.test(name);
}

/** A PromQL double-quoted string literal. */
export function quoteString(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/**
 * If text[i] opens a PromQL string literal (", ' or `), the index of its closing quote
 * (text.length when it never closes), skipping backslash escapes; otherwise i. Scanners
 * that must ignore braces, commas and variables inside strings jump over them with it.
 */
export function stringLiteralEnd(text: string, i: number): number {
  const quote = text[i];
  if (quote !== '"' && quote !== "'" && quote !== '`') {
    return i;
  }
  for (let j = i + 1; j < text.length; j++) {
    if (text[j] === '\\') {
      j++;
    } else if (text[j] === quote) {
      return j;
    }
  }
  return text.length;
}

/** A label name as it must appear in a matcher or a by/without list. */
export function labelNameToken(name: string): string {
  return isLegacyLabelName(name) ? name : quoteString(name);
}

/** A literal for a PromQL (RE2) regular expression: its metacharacters escaped. */
export function regexEscape(value: string): string {
  return value.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&');
}

export type MatchOp = '=' | '!=' | '=~' | '!~';

export interface LabelMatcher {
  name: string;
  op: MatchOp;
  value: string;
}

/**
 * A series selector naming the metric (CloudWatch requires one) with further matchers, joined
 * by sep (the query builder writes ", " as the dashboards do).
 */
export function selector(metric: string | undefined, matchers: LabelMatcher[] = [], sep = ','): string {
  const parts = matchers.map((m) => `${labelNameToken(m.name)}${m.op}${quoteString(m.value)}`);
  if (!metric) {
    return `{${parts.join(sep)}}`;
  }
  if (isLegacyMetricName(metric)) {
    return parts.length ? `${metric}{${parts.join(sep)}}` : metric;
  }
  return `{${[quoteString(metric), ...parts].join(sep)}}`;
}

const ESCAPES: Record<string, string> = { a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };

/**
 * The value of a complete PromQL string literal ("…", '…' or raw `…`), with the Go escapes
 * PromQL allows (\n, \xHH, \uHHHH, \UHHHHHHHH, octal \NNN, escaped quotes and backslashes).
 */
export function unquoteString(literal: string): string {
  const body = literal.slice(1, -1);
  if (literal[0] === '`') {
    return body;
  }
  return body.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}|.)/gs, (_, e: string) => {
    if (e.length > 1) {
      const code = e[0] >= '0' && e[0] <= '7' ? parseInt(e, 8) : parseInt(e.slice(1), 16);
      return String.fromCodePoint(code);
    }
    return ESCAPES[e] ?? e;
  });
}

/** Reads a possibly quoted name token: "a.b" → a.b, 'x' → x, bare names unchanged. */
export function unquoteName(token: string): string {
  const t = token.trim();
  if (t.length >= 2 && (t[0] === '"' || t[0] === "'") && t[t.length - 1] === t[0]) {
    return unquoteString(t);
  }
  return t;
}
