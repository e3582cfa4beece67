import * as fs from 'fs';
import * as path from 'path';

import { getHints } from '../hints';
import { LabelMatcher, MatchOp } from '../promql/names';
import { mulberry32 } from '../testing';
import { catalogMetrics, metricInfo } from './catalog';
import {
  AGG_OPS,
  aggTakesParam,
  BINARY_OPS,
  BuilderQuery,
  checkQuery,
  defaultPipeline,
  HISTOGRAM_FNS,
  HistogramFn,
  Operand,
  Pipeline,
  rangeFnsFor,
  takesQuantile,
} from './model';
import { isNumber, isWindow, parse } from './parse';
import { render } from './render';

function roundTrip(expr: string): string {
  const r = parse(expr);
  if (!r.ok) {
    throw new Error(`refused ${expr}: ${r.reason}`);
  }
  return render(r.query);
}

function reason(expr: string): string | undefined {
  const r = parse(expr);
  return r.ok ? undefined : r.reason;
}

describe('render and parse', () => {
  it.each([
    ['a bare metric', 'vllm:num_requests_running'],
    [
      'dotted and @ labels quoted, legacy ones bare',
      'DCGM_FI_DEV_GPU_UTIL{"aws.sagemaker.endpoint.name"=~"$endpoint", "@resource.host.id"!="i-1", gpu="0"}',
    ],
    ['a dotted metric name inside the braces', '{"http.server.active_requests", "@resource.service.name"="api"}'],
    ['every matcher operator', 'x{a="1", b!="2", c=~"3|4", d!~"5.*"}'],
    ['escapes in values', 'x{a="q\\"uote", b="back\\\\slash", c="new\\nline"}'],
    [
      'delta counter summed over time',
      'sum by (EndpointName) (sum_over_time(Invocations{EndpointName=~"$endpoint"}[$__interval]))',
    ],
    ['cumulative counter rate', 'sum by ("@resource.host.id") (rate(vllm:generation_tokens_total[$__rate_interval]))'],
    ['cumulative counter increase', 'increase(node_cpu_seconds_total{mode="idle"}[1h30m])'],
    [
      'native histogram quantile',
      'histogram_quantile(0.99, sum by ("aws.sagemaker.inference_framework") (rate(vllm:time_to_first_token_seconds[5m])))',
    ],
    [
      'quantile from a variable',
      'histogram_quantile($percentile, sum (sum_over_time(ModelLatency{EndpointName="e"}[5m]))) / 1000',
    ],
    [
      'histogram_avg for a vended latency',
      'histogram_avg(sum by (EndpointName) (sum_over_time(ModelLatency[5m]))) / 1000',
    ],
    [
      'histogram_count of an engine pair',
      'histogram_count(sum (rate(vllm:e2e_request_latency_seconds[5m]) or rate(sglang:e2e_request_latency_seconds[5m])))',
    ],
    ['without', 'avg without (gpu, "@resource.host.id") (DCGM_FI_DEV_GPU_UTIL)'],
    ['topk with its parameter', 'topk by (EndpointName) (5, sum_over_time(Invocations[1h]))'],
    [
      'ratio errors / invocations',
      'sum (sum_over_time(Invocation5XXErrors[5m])) / sum (sum_over_time(Invocations[5m]))',
    ],
    ['percent ratio', '100 * sum (sum_over_time(Invocation4XXErrors[5m])) / sum (sum_over_time(Invocations[5m]))'],
    ['parentheses only where precedence needs them', '(vllm:num_requests_running or sglang:num_running_reqs) * 2'],
    ['comparison and set operators', 'DCGM_FI_DEV_GPU_TEMP > 85 and DCGM_FI_DEV_GPU_UTIL unless x'],
    ['a variable as a number', 'sum (DCGM_FI_DEV_FB_FREE) * $scale'],
    [
      'a group on the right',
      '100 * (1 - avg by ("@resource.host.id") (rate(node_cpu_seconds_total{mode="idle"}[$__rate_interval])))',
    ],
    ['a tighter operation on the right', '1 - sum (a) / sum (b)'],
    ['same precedence on the right keeps its parentheses', 'a - (b - c)'],
    ['a ratio of a sum', '100 * sum (DCGM_FI_DEV_FB_USED) / (sum (DCGM_FI_DEV_FB_USED) + sum (DCGM_FI_DEV_FB_FREE))'],
    [
      'an engine pair under one aggregation',
      'sum by ("aws.sagemaker.inference_framework") (rate(vllm:prompt_tokens_total{a="b"}[5m]) or rate(sglang:prompt_tokens_total{a="b"}[5m]))',
    ],
    ['an engine pair of gauges', 'max (vllm:kv_cache_usage_perc or sglang:token_usage)'],
    // An empty without keeps every label; dropping it would sum everything into one series.
    ['an empty without', 'sum without () (rate(vllm:generation_tokens_total[5m]))'],
  ])('%s: %s', (_, expr) => {
    expect(roundTrip(expr)).toBe(expr);
  });

  it.each([
    ['single quotes', "x{a='b'}", 'x{a="b"}'],
    ['raw strings', 'x{a=`b\\c`}', 'x{a="b\\\\c"}'],
    ['grouping after the body', 'sum(x) by (a)', 'sum by (a) (x)'],
    ['__name__ matcher', '{__name__="x", a="b"}', 'x{a="b"}'],
    ['quoted legacy label', '{"x", "mode"="idle"}', 'x{mode="idle"}'],
    ['redundant parentheses', '(sum(rate(x[5m])))', 'sum (rate(x[5m]))'],
    ['spacing', 'sum  by(a,b)(x)/2', 'sum by (a, b) (x) / 2'],
    ['parentheses precedence does not need', 'a or (b / c)', 'a or b / c'],
    ['unquoted variable label', 'sum by ($agg) (x)', 'sum by ("$agg") (x)'],
    ['hex and unicode escapes', 'x{a="\\x41\\u00e9"}', 'x{a="Aé"}'],
  ])('normalises %s', (_, expr, normal) => {
    expect(roundTrip(expr)).toBe(normal);
    expect(roundTrip(normal)).toBe(normal);
  });

  it.each([
    ['rate(Invocations[5m])', 'rate() on Invocations, a delta metric: use sum_over_time'],
    [
      'sum (increase(ModelLatencyByInstanceId[5m]))',
      'increase() on ModelLatencyByInstanceId, a delta metric: use sum_over_time',
    ],
    [
      'histogram_quantile(0.9, sum (rate(ModelLatency[5m])))',
      'rate() on ModelLatency, a delta metric: use sum_over_time',
    ],
    [
      'histogram_quantile(0.9, rate(vllm:prompt_tokens_total[5m]))',
      'histogram_quantile over vllm:prompt_tokens_total, which is a counter, not a histogram',
    ],
    ['rate(DCGM_FI_DEV_GPU_UTIL[5m])', 'rate() does not apply to DCGM_FI_DEV_GPU_UTIL (a cumulative gauge)'],
    ['{"aws.sagemaker.endpoint.name"="e"}', 'a selector without a metric name (CloudWatch refuses it)'],
    ['1 + 2', 'no metric: CloudWatch needs a metric name in every query'],
    ['a / on (x) b', 'vector matching (on/ignoring/group_left) in a binary operation'],
    ['a > bool 1', 'a bool modifier on a comparison'],
    ['a ^ 2', 'the ^ operator'],
    ['x offset 5m', 'an offset modifier'],
    [
      'histogram_sum(rate(vllm:prompt_tokens_total[5m]))',
      'histogram_sum over vllm:prompt_tokens_total, which is a counter, not a histogram',
    ],
    ['sum (histogram_count(rate(vllm:e2e_request_latency_seconds[5m])))', 'an aggregation over histogram_count'],
    ['max_over_time(x[5m:1m])', 'a subquery ([range:step]) inside max_over_time()'],
    ['x @ 100', 'an @ modifier'],
    ['-x', 'a unary minus'],
    ['count (count by (a) (x))', 'an aggregation of an aggregation'],
    ['label_replace(x, "a", "$1", "b", "(.*)")', 'label_replace() is not a builder operation'],
    [
      'sum (vllm:num_requests_running{a="1"} or sglang:num_running_reqs)',
      'metrics joined by or inside sum() with different filters or functions',
    ],
    ['sum (a * on (x) b)', 'the * operator with a modifier inside sum()'],
    ['histogram_quantile(0.9, a or b)', 'an operation inside histogram_quantile()'],
    [
      'rate(vllm:prompt_tokens_total[5m]) or rate(Invocations[5m])',
      'rate() on Invocations, a delta metric: use sum_over_time',
    ],
    ['$metric{a="b"}', 'a template variable as the metric name'],
    ['{__name__="$metric", a="b"}', 'a template variable as the metric name'],
    ['sum (rate({"${metric}"}[5m]))', 'a template variable as the metric name'],
    ['rate(node_${m}_total[5m])', 'a template variable in the metric name'],
    ['DCGM_FI_DEV_$field', 'a template variable in the metric name'],
    ['vllm:[[x]]_total', 'a template variable in the metric name'],
    // by (${agg:csv}) is by (a,b) once interpolated; quoted, it would be one label named "a,b".
    [
      'sum by (${agg:csv}) (x)',
      'a variable with a format (${agg:csv}) as a label name: the builder writes label variables quoted',
    ],
    ['rate(x[5m] offset 1m)', 'an offset modifier inside rate()'],
    ['sum (', 'the query does not parse (at character 6)'],
    ['', 'empty query'],
    // Comments would be dropped, and inside a list the grammar hands them over as list items.
    ['sum (x) # errors', 'a comment (the builder would drop it)'],
    ['# errors\nsum (x)', 'a comment (the builder would drop it)'],
    ['x{a="b", # c\n d="e"}', 'a comment (the builder would drop it)'],
    ['sum by (a # c\n) (x)', 'a comment (the builder would drop it)'],
  ])('refuses %s', (expr, why) => {
    expect(reason(expr)).toBe(why);
  });
});

describe('the builder inputs', () => {
  // What the Number/Quantile/Parameter and Window fields accept is what parse reads back there.
  it.each(['100', '0.99', '1e3', '0x10', 'Inf', '-1', '$x', '${x}', '1OO', '0.9)', '1 2', '', '$__rate_interval'])(
    'number %p',
    (t) => {
      expect(isNumber(t)).toBe(parse(`x * ${t}`).ok);
    }
  );
  it.each(['5m', '1h30m', '$__rate_interval', '${w}', '5 m', '5m] or vector(1', '', '300', '5M'])('window %p', (t) => {
    expect(isWindow(t)).toBe(parse(`rate(x[${t}])`).ok);
  });
});

// Random models, from a seeded generator, written and read back: parse(render(m)) is m.

const LABELS = [
  'aws.sagemaker.endpoint.name',
  '@resource.host.id',
  '@instrumentation.@name',
  'EndpointName',
  'mode',
  'a-b',
  '9lives',
  '$agg',
  'le',
  'ünï',
];
const VALUE_CHARS = ['a', 'Z', '0', '.', '*', '|', '"', '\\', '\n', '$', '{', '}', ',', ' ', 'é', "'", '`', '#', '日'];
const WINDOWS = ['5m', '30s', '1h30m', '$__rate_interval', '$__interval', '$__range', '${window}'];
const NUMBERS = ['100', '1000', '0.5', '1e3', '$scale', '${x}', '0x10'];
const CUSTOM_METRICS = ['http_requests_total', 'http.server.active_requests', 'app:latency', '@odd metric'];

function generator(seed: number) {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  const metrics = [...catalogMetrics().map((m) => m.name), ...CUSTOM_METRICS];
  const value = () => Array.from({ length: Math.floor(rnd() * 6) }, () => pick(VALUE_CHARS)).join('');
  const matcher = (): LabelMatcher => ({
    name: pick(LABELS),
    op: pick<MatchOp>(['=', '!=', '=~', '!~']),
    value: value(),
  });
  const pipeline = (): Pipeline => {
    const metric = pick(metrics);
    const p: Pipeline = { type: 'pipeline', metric, matchers: Array.from({ length: Math.floor(rnd() * 4) }, matcher) };
    const fns = rangeFnsFor(metric);
    if (rnd() < 0.7) {
      p.range = { fn: pick(fns), window: pick(WINDOWS) };
    }
    if (rnd() < 0.6) {
      const op = pick(AGG_OPS);
      p.agg = { op, by: rnd() < 0.7 ? Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => pick(LABELS)) : [] };
      if (p.agg.by.length && rnd() < 0.2) {
        p.agg.without = true;
      }
      if (aggTakesParam(op)) {
        p.agg.param = pick(NUMBERS);
      }
      // An engine pair: a second metric read the same way.
      const partner = metrics.find(
        (m) => m !== metric && rangeFnsFor(m) === fns && takesQuantile(m) === takesQuantile(metric)
      );
      if (partner && rnd() < 0.3) {
        p.alternatives = [partner];
      }
    }
    if (takesQuantile(metric) && rnd() < 0.6) {
      const h = pick(['0.99', '0.5', '$percentile', ...HISTOGRAM_FNS]);
      if (h.startsWith('histogram_')) {
        p.histogramFn = h as HistogramFn;
      } else {
        p.quantile = h;
      }
    }
    return p;
  };
  const query = (depth: number): BuilderQuery => ({
    first: rnd() < 0.8 ? pipeline() : { type: 'number', value: pick(NUMBERS) },
    rest: Array.from({ length: Math.floor(rnd() * (depth ? 3 : 4)) }, () => ({
      op: pick(BINARY_OPS),
      operand: operand(depth),
    })),
  });
  const operand = (depth: number): Operand => {
    const x = rnd();
    if (x < 0.15 && depth < 2) {
      const group = query(depth + 1);
      // A group holds an operation; a lone term in parentheses is just the term.
      return group.rest.length ? { type: 'group', query: group } : group.first;
    }
    return x < 0.65 ? pipeline() : { type: 'number', value: pick(NUMBERS) };
  };
  return () => query(0);
}

describe('random builder models', () => {
  const next = generator(18);
  const models = Array.from({ length: 600 }, next).filter((q) => checkQuery(q) === undefined);

  it('are mostly valid (the generator exercises the builder, not the refusals)', () => {
    expect(models.length).toBeGreaterThan(400);
  });

  it('round-trip: parse(render(m)) is m, and render is stable', () => {
    for (const m of models) {
      const text = render(m);
      const r = parse(text);
      if (!r.ok) {
        throw new Error(`${text}: ${r.reason}`);
      }
      expect(r.query).toEqual(m);
      expect(render(r.query)).toBe(text);
    }
  });
});

describe('mutated dashboard queries', () => {
  // Inputs nobody chose: dashboard queries with characters dropped, doubled or swapped in.
  const rnd = mulberry32(7);
  const sources = dashboardTargets().map((t) => t.expr);
  const cases = Array.from({ length: 1500 }, () => {
    let e = sources[Math.floor(rnd() * sources.length)];
    for (let k = 1 + Math.floor(rnd() * 3); k > 0; k--) {
      const i = Math.floor(rnd() * e.length);
      const c = '(){}[]",=~!$ .@:0aby'[Math.floor(rnd() * 20)];
      const r = rnd();
      e =
        r < 0.4
          ? e.slice(0, i) + e.slice(i + 1)
          : r < 0.7
            ? e.slice(0, i) + c + e.slice(i)
            : e.slice(0, i) + c + e.slice(i + 1);
    }
    return e;
  });

  it('are read or refused with a reason, never thrown on, and what is read writes back stably', () => {
    let read = 0;
    for (const e of cases) {
      const r = parse(e);
      if (!r.ok) {
        expect(r.reason).toMatch(/\w/);
        continue;
      }
      read++;
      const again = parse(render(r.query));
      expect(again).toEqual({ ok: true, query: r.query });
    }
    // Some mutations land in label values or keep the query valid: both paths are exercised.
    expect(read).toBeGreaterThan(50);
    expect(read).toBeLessThan(cases.length);
  });
});

describe('delta metrics', () => {
  const delta = catalogMetrics().filter((m) => m.temporality === 'delta');

  it('are the vended family, and never offered rate or increase', () => {
    expect(delta.length).toBeGreaterThan(20);
    for (const m of delta) {
      expect(m.family).toBe('vended');
      expect(rangeFnsFor(m.name)).not.toContain('rate');
      expect(rangeFnsFor(m.name)).not.toContain('increase');
      expect(rangeFnsFor(m.name)).toContain('sum_over_time');
    }
  });

  it.each([
    'FirstChunkLatency',
    'ConcurrentRequestsPerModel',
    'InvocationsPerInstance',
    'InvocationsPerCopy',
    'ModelLatencyByAzByInstanceType',
    'InvocationModelErrorsForIc',
  ])('include %s, which the Code editor already calls delta', (name) => {
    expect(getHints(`rate(${name}[5m])`).map((h) => h.id)).toContain('rate-on-delta');
    expect(metricInfo(name)?.temporality).toBe('delta');
    expect(rangeFnsFor(name)).not.toContain('rate');
    expect(reason(`rate(${name}[5m])`)).toBe(`rate() on ${name}, a delta metric: use sum_over_time`);
  });

  it('start with sum_over_time when picked (gauges with none), and rate on them is refused', () => {
    for (const m of delta) {
      expect(defaultPipeline(m.name).range?.fn).toBe(m.type === 'gauge' ? undefined : 'sum_over_time');
      expect(reason(`sum (rate(${m.name}[5m]))`)).toBe(`rate() on ${m.name}, a delta metric: use sum_over_time`);
    }
  });

  it('cumulative counters and histograms start with rate', () => {
    expect(defaultPipeline('vllm:prompt_tokens_total').range?.fn).toBe('rate');
    expect(render({ first: defaultPipeline('vllm:time_to_first_token_seconds'), rest: [] })).toBe(
      'histogram_quantile(0.99, sum (rate(vllm:time_to_first_token_seconds[$__rate_interval])))'
    );
    expect(render({ first: defaultPipeline('ModelLatency'), rest: [] })).toBe(
      'histogram_quantile(0.99, sum (sum_over_time(ModelLatency[$__interval])))'
    );
    expect(metricInfo('ModelLatency')?.unit).toBe('µs');
  });
});

describe('label quoting', () => {
  it.each([
    ['aws.sagemaker.endpoint.name', '"aws.sagemaker.endpoint.name"'],
    ['@resource.host.id', '"@resource.host.id"'],
    ['@instrumentation.@name', '"@instrumentation.@name"'],
    ['EndpointName', 'EndpointName'],
    ['a-b', '"a-b"'],
  ])('%s is written %s in filters and grouping', (label, token) => {
    const q: BuilderQuery = {
      first: {
        type: 'pipeline',
        metric: 'x',
        matchers: [{ name: label, op: '=', value: 'v' }],
        agg: { op: 'sum', by: [label] },
      },
      rest: [],
    };
    expect(render(q)).toBe(`sum by (${token}) (x{${token}="v"})`);
    expect(parse(render(q))).toEqual({ ok: true, query: q });
  });
});

// Every panel query of the three dashboards: those the builder represents come back
// character for character; the others are listed here with the reason the editor shows.
const REFUSED: Record<string, string> = {
  'performance / Invocations / A': 'the * operator with a modifier inside sum()',
  'performance / Instances / A': 'an aggregation inside another operation',
  'performance / Inference components / A': 'an aggregation of an aggregation',
  'performance / Avg AZ skew / A': 'the / operator inside avg()',
  'performance / 5XX error rate / A': 'the * operator with a modifier inside sum()',
  'performance / Endpoints and inference components / A': 'an aggregation of an aggregation',
  'performance / Endpoints and inference components / B': 'an aggregation of an aggregation',
  'performance / Fleet health / A': 'label_replace() is not a builder operation',
  'performance / Instance performance / E': 'a subquery ([range:step]) inside max_over_time()',
  'performance / Instance performance / G': 'a subquery ([range:step]) inside max_over_time()',
  'performance / Latency breakdown · Invocation / A': 'the * operator with a modifier inside sum()',
  'performance / Latency breakdown · Invocation / B': 'the * operator with a modifier inside sum()',
  'performance / Requests per Availability Zone / A': 'vector matching (on/ignoring/group_left) in a binary operation',
  'performance / Requests per instance (which machines serve traffic) / A':
    'the * operator with a modifier inside sum()',
  'performance / Requests per IC copy (which models serve traffic) / A': 'the * operator with a modifier inside sum()',
  'performance / Output tokens/s per instance and fleet percentile / B': 'an aggregation inside another operation',
  'performance / Concurrent requests per IC copy / A': 'vector matching (on/ignoring/group_left) in a binary operation',
  'performance / Invocation errors / A': 'the * operator with a modifier inside sum()',
  'performance / Invocation errors / B': 'the * operator with a modifier inside sum()',
  'performance / Invocation errors / C': 'the * operator with a modifier inside sum()',
  'performance / Error rate per inference component / A': 'the * operator with a modifier inside sum()',
  'performance / Error rate per inference component / B': 'the * operator with a modifier inside sum()',
  'performance / Models / A': 'histogram_count inside an aggregation or function (the builder writes it outermost)',
  'performance / Models / H': 'metrics joined by or inside sum() with different filters or functions',
  'performance / Finish reasons / A': 'label_replace() is not a builder operation',
  'performance / Latency SLOs: attainment and error budget / A': 'histogram_fraction() is not a builder operation',
  'performance / Latency SLOs: attainment and error budget / B': 'histogram_fraction() is not a builder operation',
  'performance / Latency SLOs: attainment and error budget / C': 'histogram_fraction() is not a builder operation',
  'performance / Latency SLOs: attainment and error budget / D': 'histogram_fraction() is not a builder operation',
  'performance / Availability SLO: attainment and error budget / A': 'label_replace() is not a builder operation',
  'performance / Availability SLO: attainment and error budget / B': 'label_replace() is not a builder operation',
  'performance / SLO burn rate (1 h) / A': 'histogram_fraction() is not a builder operation',
  'performance / SLO burn rate (1 h) / B': 'histogram_fraction() is not a builder operation',
  'performance / SLO burn rate (1 h) / C': 'label_replace() is not a builder operation',
  'capacity / Instances / A': 'an aggregation inside another operation',
  'capacity / Free GPUs / A': 'an aggregation inside another operation',
  'capacity / Instances without IC copies / A': 'the unless operator inside count()',
  'capacity / Capacity health / A': 'label_replace() is not a builder operation',
  'capacity / Headroom and placement / B': 'the < operator inside count()',
  'capacity / Clock throttling / A': 'the > operator inside count()',
  'capacity / Clock throttling / B': 'the and operator with a modifier inside min()',
  'capacity / GPU errors (XID, ECC) / A': 'vector matching (on/ignoring/group_left) in a binary operation',
  'capacity / GPU errors (XID, ECC) / B': 'vector matching (on/ignoring/group_left) in a binary operation',
  'capacity / GPU errors (XID, ECC) / C': 'vector matching (on/ignoring/group_left) in a binary operation',
  'capacity / GPU errors (XID, ECC) / D': 'vector matching (on/ignoring/group_left) in a binary operation',
  'capacity / Copies that fit now / A': 'vector() is not a builder operation',
  'capacity / Copies that fit per AZ / A': 'floor() is not a builder operation',
  'capacity / Where it fits / A': 'vector matching (on/ignoring/group_left) in a binary operation',
  'capacity / Where it fits / B': 'floor() is not a builder operation',
  'reliability / Instances / A': 'an aggregation inside another operation',
  'reliability / Inference components / A': 'an aggregation of an aggregation',
  'reliability / Avg AZ skew / A': 'the / operator inside avg()',
  'reliability / Instances and IC copies per AZ / A': 'an aggregation inside another operation',
  'reliability / Instances and IC copies per AZ / B': 'an aggregation of an aggregation',
  'reliability / AZ risk per endpoint / A': 'a bool modifier on a comparison',
  'reliability / Requests per Availability Zone / A': 'vector matching (on/ignoring/group_left) in a binary operation',
  'reliability / Scaling events vs load / A': 'vector matching (on/ignoring/group_left) in a binary operation',
  'reliability / Scaling events vs load / B': 'vector matching (on/ignoring/group_left) in a binary operation',
  'reliability / Scaling events vs load / D': 'vector matching (on/ignoring/group_left) in a binary operation',
  'reliability / Scaling actions / A': 'a subquery ([range:step]) inside max_over_time()',
  'reliability / Cold start anatomy / A': 'label_join() is not a builder operation',
  'reliability / Cold start anatomy / B': 'label_join() is not a builder operation',
  'reliability / Cold start anatomy / C': 'label_join() is not a builder operation',
  'reliability / Cold start anatomy / D': 'clamp_min() is not a builder operation',
  'reliability / Cold start advice / A': 'label_replace() is not a builder operation',
  'reliability / ICE events / A #2': 'a subquery ([range:step]) inside max_over_time()',
};

interface Target {
  key: string;
  expr: string;
}

function dashboardTargets(): Target[] {
  const out: Target[] = [];
  for (const name of ['performance', 'capacity', 'reliability']) {
    const d = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'dashboards', `${name}.json`), 'utf8'));
    const walk = (x: unknown, title: string) => {
      if (Array.isArray(x)) {
        x.forEach((v) => walk(v, title));
      } else if (x && typeof x === 'object') {
        const o = x as Record<string, unknown>;
        const t = typeof o.title === 'string' ? o.title : title;
        if (typeof o.expr === 'string' && typeof o.refId === 'string') {
          // Panels with the same title are told apart by their order.
          const key = `${name} / ${t} / ${o.refId}`;
          const n = out.filter((x) => x.key === key || x.key.startsWith(`${key} #`)).length;
          out.push({ key: n ? `${key} #${n + 1}` : key, expr: o.expr });
        }
        Object.values(o).forEach((v) => walk(v, t));
      }
    };
    walk(d, '');
  }
  return out;
}

describe('dashboard queries', () => {
  const targets = dashboardTargets();

  it('reads every dashboard target', () => {
    expect(targets.length).toBeGreaterThan(100);
  });

  it.each(targets.map((t) => [t.key, t]))('%s', (key, t) => {
    const r = parse((t as Target).expr);
    if (REFUSED[key as string] === undefined) {
      expect(r.ok ? render(r.query) : `refused: ${r.reason}`).toBe((t as Target).expr);
    } else {
      expect(r.ok ? 'represented' : r.reason).toBe(REFUSED[key as string]);
    }
  });

  it('lists no refusal for a query that is gone', () => {
    const keys = new Set(targets.map((t) => t.key));
    expect(Object.keys(REFUSED).filter((k) => !keys.has(k))).toEqual([]);
  });
});
