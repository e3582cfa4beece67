// Pure checks for CloudWatch PromQL pitfalls that are valid PromQL but go wrong silently or
// get refused by CloudWatch (see docs/query-editor.md). No parser: they must run on every
// keystroke and on half-typed queries, so they scan the text with string-aware regexes.

export interface Hint {
  /** Stable id, used by tests and as a React key. */
  id: 'selector-without-metric' | 'underscored-label' | 'rate-on-delta';
  message: string;
  /** A corrected query when the fix is mechanical. */
  fix?: string;
}

/** Dotted labels SageMaker and CloudWatch write (pkg/semconv holds the same names for the Go side), keyed by the underscore form users type. */
const DOTTED_LABELS = [
  'aws.sagemaker.endpoint.name',
  'aws.sagemaker.variant.name',
  'aws.sagemaker.inference_component.name',
  'aws.sagemaker.inference_framework',
  'aws.sagemaker.container.id',
  'aws.sagemaker.container.name',
  'aws.sagemaker.scaling.direction',
  'aws.sagemaker.operation.type',
  '@resource.host.id',
  '@resource.host.type',
  '@resource.cloud.availability_zone',
  '@resource.cloud.resource_id',
  '@resource.service.name',
  '@aws.account',
  '@aws.region',
  '@instrumentation.@name',
];

const UNDERSCORED = new Map(DOTTED_LABELS.map((l) => [underscored(l), l]));

function underscored(label: string): string {
  return label.replace(/^@+/, '').replace(/[.@]+/g, '_');
}

/** Classic SageMaker metrics that arrive with delta temporality (one interval's count per sample). */
const DELTA_METRIC =
  /^(Invocations\w*|Invocation4XXErrors\w*|Invocation5XXErrors\w*|InvocationModelErrors\w*|ModelLatency\w*|OverheadLatency\w*|FirstChunk\w*|ConcurrentRequests\w*|MidStreamErrors\w*)$/;

/** Strings and comments blanked out so that label values such as "a{b}" do not confuse the scans. */
function maskLiterals(expr: string): string {
  return expr.replace(/"(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|`[^`]*`?|#[^\n]*/g, (lit) => {
    if (lit[0] === '#') {
      return ' '.repeat(lit.length);
    }
    const closed = lit.length > 1 && lit[lit.length - 1] === lit[0];
    return lit[0] + ' '.repeat(lit.length - (closed ? 2 : 1)) + (closed ? lit[0] : '');
  });
}

/** Whether the text inside {...} names a metric: a bare quoted string, or __name__= / @datapoint.@name=. */
function bracesNameMetric(inner: string): boolean {
  const parts = splitMatchers(inner);
  return parts.some(
    (p) =>
      /^\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')\s*$/.test(p) ||
      /^\s*("?)(__name__|@datapoint\.@name)\1\s*=(?!~)/.test(p)
  );
}

function splitMatchers(inner: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quote = '';
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i];
    if (quote) {
      cur += c;
      if (c === '\\') {
        cur += inner[++i] ?? '';
      } else if (c === quote) {
        quote = '';
      }
    } else if (c === '"' || c === "'") {
      quote = c;
      cur += c;
    } else if (c === ',') {
      out.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  out.push(cur);
  return out;
}

function selectorWithoutMetric(expr: string, masked: string): Hint | undefined {
  const re = /\{/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(masked))) {
    const open = m.index;
    const close = masked.indexOf('}', open);
    const inner = expr.slice(open + 1, close < 0 ? expr.length : close);
    // A metric name directly before the brace (identifier, may contain ':').
    const before = masked.slice(0, open).replace(/\s+$/, '');
    const namedBefore =
      /[A-Za-z_:][A-Za-z0-9_:]*$/.test(before) && !/\b(by|without|on|ignoring|group_left|group_right)$/.test(before);
    if (!namedBefore && !bracesNameMetric(inner) && inner.trim() !== '') {
      return {
        id: 'selector-without-metric',
        message:
          'CloudWatch refuses a selector without a metric name. Name the metric before the braces ' +
          '(vllm:num_requests_running{...}) or inside them ({"vllm:num_requests_running", ...}); ' +
          'a regex on __name__ is refused too.',
      };
    }
    if (close < 0) {
      break;
    }
  }
  return undefined;
}

function underscoredLabels(expr: string, masked: string): Hint | undefined {
  const found: Array<[string, string]> = [];
  const re = /[A-Za-z_][A-Za-z0-9_]*/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(masked))) {
    const ident = m[0];
    const dotted = UNDERSCORED.get(ident);
    if (dotted && !found.some(([u]) => u === ident)) {
      found.push([ident, dotted]);
    }
  }
  if (found.length === 0) {
    return undefined;
  }
  let fix = expr;
  for (const [u, dotted] of found) {
    // Only identifiers outside string literals are replaced: walk the masked text for positions.
    fix = replaceOutsideLiterals(fix, u, `"${dotted}"`);
  }
  const names = found.map(([u, d]) => `${u} → "${d}"`).join(', ');
  return {
    id: 'underscored-label',
    message: `Underscore label names match nothing in CloudWatch; use the quoted dotted form: ${names}.`,
    fix,
  };
}

function replaceOutsideLiterals(expr: string, ident: string, replacement: string): string {
  const masked = maskLiterals(expr);
  const re = new RegExp(`(?<![A-Za-z0-9_:"'.@])${ident}(?![A-Za-z0-9_:"'])`, 'g');
  let out = '';
  let last = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(masked))) {
    out += expr.slice(last, m.index) + replacement;
    last = m.index + ident.length;
  }
  return out + expr.slice(last);
}

function rateOnDelta(masked: string, expr: string): Hint | undefined {
  const re = /\b(rate|irate|increase)\s*\(/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(masked))) {
    const start = m.index + m[0].length;
    const arg = argumentText(masked, expr, start);
    const name = metricNameOf(arg);
    if (name && DELTA_METRIC.test(name)) {
      return {
        id: 'rate-on-delta',
        message:
          `${name} is a delta metric (each sample is one interval's count), so ${m[1]}() gives wrong ` +
          `results without warning. Use sum_over_time(${name}[...]) instead; divide by the window in ` +
          'seconds for a per-second rate.',
        fix: expr.slice(0, m.index) + 'sum_over_time(' + expr.slice(start),
      };
    }
  }
  return undefined;
}

/** The raw argument of a call opened at start, up to its matching parenthesis. */
function argumentText(masked: string, expr: string, start: number): string {
  let depth = 1;
  for (let i = start; i < masked.length; i++) {
    if (masked[i] === '(') {
      depth++;
    } else if (masked[i] === ')' && --depth === 0) {
      return expr.slice(start, i);
    }
  }
  return expr.slice(start);
}

function metricNameOf(arg: string): string | undefined {
  const bare = /^\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*(\{|\[|$)/.exec(arg);
  if (bare) {
    return bare[1];
  }
  const quoted = /^\s*\{\s*"([^"]+)"/.exec(arg) ?? /__name__\s*=\s*"([^"]+)"/.exec(arg);
  return quoted?.[1];
}

/** All hints for a query, in a stable order; empty when the query looks fine. */
export function getHints(expr: string | undefined): Hint[] {
  if (!expr || !expr.trim()) {
    return [];
  }
  const masked = maskLiterals(expr);
  return [selectorWithoutMetric(expr, masked), underscoredLabels(expr, masked), rateOnDelta(masked, expr)].filter(
    (h): h is Hint => h !== undefined
  );
}
