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

export type MatchOp = '=' | '!=' | '=~' | '!~';

export interface LabelMatcher {
  name: string;
  op: MatchOp;
  value: string;
}

/** A series selector naming the metric (CloudWatch requires one) with further matchers. */
export function selector(metric: string | undefined, matchers: LabelMatcher[] = []): string {
  const parts = matchers.map((m) => `${labelNameToken(m.name)}${m.op}${quoteString(m.value)}`);
  if (!metric) {
    return `{${parts.join(',')}}`;
  }
  if (isLegacyMetricName(metric)) {
    return parts.length ? `${metric}{${parts.join(',')}}` : metric;
  }
  return `{${[quoteString(metric), ...parts].join(',')}}`;
}

/** Reads a possibly quoted name token: "a.b" → a.b, 'x' → x, bare names unchanged. */
export function unquoteName(token: string): string {
  const t = token.trim();
  if (t.length >= 2 && (t[0] === '"' || t[0] === "'") && t[t.length - 1] === t[0]) {
    return t.slice(1, -1).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return t;
}
