import { parser } from '@prometheus-io/lezer-promql';

import { mulberry32 } from '../testing';
import {
  addMatcher,
  applyFilters,
  filterMatcher,
  hasMatcher,
  metricCarriesLabel,
  regexLiteral,
  removeMatcher,
  toggleMatcher,
} from './filters';
import { LabelMatcher } from './names';

const EP = 'aws.sagemaker.endpoint.name';
const ep = (value: string, op: LabelMatcher['op'] = '='): LabelMatcher => ({ name: EP, op, value });

function parses(expr: string): boolean {
  let ok = true;
  parser.parse(expr).iterate({
    enter: (n) => {
      ok &&= !n.type.isError;
    },
  });
  return ok;
}

describe('metricCarriesLabel', () => {
  it.each([
    ['vllm:num_requests_running', EP, true],
    ['vllm:num_requests_running', '@resource.host.id', true],
    ['DCGM_FI_DEV_GPU_UTIL', 'gpu', true],
    // Vended metrics carry the CloudWatch dimension, not the OTel attribute.
    ['Invocations', EP, false],
    ['Invocations', 'EndpointName', true],
    ['node_cpu_seconds_total', 'gpu', false],
    ['Invocations', '@aws.region', true],
    // Metrics the catalog does not know, and nameless selectors, may carry anything.
    ['http.server.active_requests', EP, true],
    [undefined, EP, true],
  ])('%s carries %s: %s', (metric, label, want) => {
    expect(metricCarriesLabel(metric, label)).toBe(want);
  });
});

describe('addMatcher', () => {
  it.each([
    ['bare name', 'vllm:num_requests_running', 'vllm:num_requests_running{"aws.sagemaker.endpoint.name"="a"}'],
    ['empty braces', 'vllm:num_requests_running{}', 'vllm:num_requests_running{"aws.sagemaker.endpoint.name"="a"}'],
    [
      'after the last matcher, trailing comma kept',
      'vllm:num_requests_running{engine="0",}',
      'vllm:num_requests_running{engine="0", "aws.sagemaker.endpoint.name"="a",}',
    ],
    [
      'quoted metric name',
      '{"vllm:num_requests_running"}',
      '{"vllm:num_requests_running", "aws.sagemaker.endpoint.name"="a"}',
    ],
    ['__name__ matcher', '{__name__="Invocations"}', '{__name__="Invocations"}'],
    [
      'only the selectors of metrics that carry the label',
      'sum(rate(vllm:prompt_tokens_total[5m])) / sum(sum_over_time(Invocations[5m]))',
      'sum(rate(vllm:prompt_tokens_total{"aws.sagemaker.endpoint.name"="a"}[5m])) / sum(sum_over_time(Invocations[5m]))',
    ],
    [
      'several selectors, spacing and offsets kept',
      'sglang:num_running_reqs  offset 5m +  on() custom_metric{x="1"}',
      'sglang:num_running_reqs{"aws.sagemaker.endpoint.name"="a"}  offset 5m +  on() custom_metric{x="1", "aws.sagemaker.endpoint.name"="a"}',
    ],
    [
      'already there',
      'vllm:num_requests_running{"aws.sagemaker.endpoint.name"="a"}',
      'vllm:num_requests_running{"aws.sagemaker.endpoint.name"="a"}',
    ],
    [
      'template variables stay in place',
      'rate($metric{x="$v"}[$__rate_interval])',
      'rate($metric{x="$v", "aws.sagemaker.endpoint.name"="a"}[$__rate_interval])',
    ],
    [
      'strings are not selectors',
      'label_replace(up, "d", "{x}", "s", "(.*)")',
      'label_replace(up{"aws.sagemaker.endpoint.name"="a"}, "d", "{x}", "s", "(.*)")',
    ],
    ['broken text unchanged', 'sum(vllm:num_requests_running', 'sum(vllm:num_requests_running'],
  ])('%s', (_, expr, want) => {
    expect(addMatcher(expr, ep('a'))).toBe(want);
  });

  it('writes a legacy label name bare', () => {
    expect(addMatcher('DCGM_FI_DEV_GPU_UTIL', { name: 'gpu', op: '!=', value: '0' })).toBe(
      'DCGM_FI_DEV_GPU_UTIL{gpu!="0"}'
    );
  });
});

describe('removeMatcher', () => {
  it.each([
    [
      'the only one: braces go',
      'vllm:num_requests_running{"aws.sagemaker.endpoint.name"="a"}',
      'vllm:num_requests_running',
    ],
    ['first of two', 'm{"aws.sagemaker.endpoint.name"="a", x="1"}', 'm{x="1"}'],
    ['last of two', 'm{x="1", "aws.sagemaker.endpoint.name"="a"}', 'm{x="1"}'],
    [
      'in every selector',
      'm{"aws.sagemaker.endpoint.name"="a"} / n{"aws.sagemaker.endpoint.name"="a",y="2"}',
      'm / n{y="2"}',
    ],
    [
      'other values and operators stay',
      'm{"aws.sagemaker.endpoint.name"="b", "aws.sagemaker.endpoint.name"!="a"}',
      'm{"aws.sagemaker.endpoint.name"="b", "aws.sagemaker.endpoint.name"!="a"}',
    ],
    ['single-quoted value', "m{'aws.sagemaker.endpoint.name'='a'}", 'm'],
    [
      'a nameless selector keeps its last matcher',
      '{"aws.sagemaker.endpoint.name"="a"}',
      '{"aws.sagemaker.endpoint.name"="a"}',
    ],
  ])('%s', (_, expr, want) => {
    expect(removeMatcher(expr, ep('a'))).toBe(want);
  });
});

describe('toggleMatcher', () => {
  it('filter for adds, again removes', () => {
    const once = toggleMatcher('vllm:num_requests_running', EP, 'a', false);
    expect(once).toBe('vllm:num_requests_running{"aws.sagemaker.endpoint.name"="a"}');
    expect(toggleMatcher(once, EP, 'a', false)).toBe('vllm:num_requests_running');
  });

  it('puts a label the catalog does not list for any selector into every selector', () => {
    // A result row shows the label, so some series carries it: the catalog is incomplete.
    expect(toggleMatcher('Invocations / node_cpu_seconds_total', '@resource.service.name', 'x', false)).toBe(
      'Invocations{"@resource.service.name"="x"} / node_cpu_seconds_total{"@resource.service.name"="x"}'
    );
    // Where some selector carries it, only those get it.
    expect(toggleMatcher('Invocations / node_cpu_seconds_total', 'cpu', '0', false)).toBe(
      'Invocations / node_cpu_seconds_total{cpu="0"}'
    );
  });

  it('filter out replaces filter for', () => {
    const forA = 'vllm:num_requests_running{"aws.sagemaker.endpoint.name"="a"}';
    expect(toggleMatcher(forA, EP, 'a', true)).toBe('vllm:num_requests_running{"aws.sagemaker.endpoint.name"!="a"}');
  });
});

describe('ad-hoc filters', () => {
  it('maps Grafana operators to matchers', () => {
    expect(filterMatcher({ key: 'k', operator: '=~', value: 'a.*' })).toEqual({ name: 'k', op: '=~', value: 'a.*' });
    expect(filterMatcher({ key: 'k', operator: '=|', value: 'a.b', values: ['a.b', 'c|d'] })).toEqual({
      name: 'k',
      op: '=~',
      value: 'a\\.b|c\\|d',
    });
    expect(filterMatcher({ key: 'k', operator: '!=|', value: 'x' })).toEqual({ name: 'k', op: '!~', value: 'x' });
    expect(filterMatcher({ key: 'k', operator: '<', value: '3' })).toBeUndefined();
  });

  it('applies the supported ones and returns the others', () => {
    const out = applyFilters('vllm:num_requests_running / Invocations', [
      { key: EP, operator: '=', value: 'ep-1' },
      { key: '@aws.region', operator: '!=', value: 'us-west-2' },
      { key: 'x', operator: '>', value: '1' },
    ]);
    expect(out.expr).toBe(
      'vllm:num_requests_running{"aws.sagemaker.endpoint.name"="ep-1", "@aws.region"!="us-west-2"} / Invocations{"@aws.region"!="us-west-2"}'
    );
    expect(out.unsupported).toEqual([{ key: 'x', operator: '>', value: '1' }]);
  });
});

// Values CloudWatch may hold: quotes, backslashes, newlines, tabs, braces, commas, template
// syntax and UTF-8 beyond the BMP.
const ALPHABET = [
  'a',
  'Z',
  '9',
  '-',
  '"',
  "'",
  '\\',
  '\n',
  '\t',
  '{',
  '}',
  ',',
  '=',
  '$',
  '`',
  'é',
  '日',
  '🚀',
  ' ',
  '.',
  '|',
];

function value(rand: () => number): string {
  const n = 1 + Math.floor(rand() * 12);
  return Array.from({ length: n }, () => ALPHABET[Math.floor(rand() * ALPHABET.length)]).join('');
}

const EXPRS = [
  'vllm:num_requests_running',
  'sum by ("aws.sagemaker.endpoint.name") (rate(vllm:prompt_tokens_total{engine="0"}[5m]))',
  'histogram_quantile(0.9, sum by (le) (rate(vllm:time_to_first_token_seconds[5m]))) > 0 and on() DCGM_FI_DEV_GPU_UTIL{gpu="0"}',
  '{"vllm:num_requests_running", "@resource.host.id"=~"i-.*"}',
];

describe('generated values (seed 27)', () => {
  const rand = mulberry32(27);
  const cases = Array.from({ length: 200 }, (_, i) => ({ expr: EXPRS[i % EXPRS.length], v: value(rand) }));

  it.each(cases)('round trip of %j', ({ expr, v }) => {
    const m = ep(v, rand() < 0.5 ? '=' : '!=');
    const added = addMatcher(expr, m);
    expect(parses(added)).toBe(true);
    expect(hasMatcher(added, m)).toBe(true);
    // Every selector that may carry the label has it: adding again changes nothing.
    expect(addMatcher(added, m)).toBe(added);
    expect(removeMatcher(added, m)).toBe(expr);
    expect(hasMatcher(expr, m)).toBe(false);
  });

  it('regexLiteral matches exactly the value', () => {
    for (let i = 0; i < 100; i++) {
      const v = value(rand);
      expect(new RegExp(`^${regexLiteral(v)}$`, 'u').test(v)).toBe(true);
      expect(new RegExp(`^${regexLiteral(v)}$`, 'u').test(`${v}x`)).toBe(false);
    }
  });
});
