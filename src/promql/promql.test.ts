import { CompletionContext, CompletionResult } from '@codemirror/autocomplete';
import { Diagnostic } from '@codemirror/lint';
import { dateTime } from '@grafana/data';
import { newCompleteStrategy, PromQLExtension } from '@prometheus-io/codemirror-promql';

import { ResourceClient } from '../resources';
import { fakeResources } from '../testing';
import { CACHE_TTL_MS, ResourcePrometheusClient } from './client';
import { insertionFor, insideBraces, withQuotedNames } from './completion';
import { EXAMPLES } from '../examples';
import { maskTemplateVariables, parsedState, templateAwareLinter } from './lint';
import {
  labelNameToken,
  quoteString,
  regexEscape,
  selector,
  stringLiteralEnd,
  unquoteName,
  unquoteString,
} from './names';

const METRICS = ['vllm:num_requests_running', 'DCGM_FI_DEV_GPU_UTIL', 'http.server.active_requests'];
const LABELS = ['__name__', 'aws.sagemaker.endpoint.name', '@resource.host.id', 'EndpointName'];

function setup() {
  const fetcher = fakeResources({
    'api/v1/label/__name__/values': METRICS,
    'api/v1/labels': LABELS,
    'api/v1/label/aws.sagemaker.endpoint.name/values': ['ep-a', 'ep"b'],
    'api/v1/label/%40resource.host.id/values': ['i-1'],
    'api/v1/series': [{ __name__: 'up', job: 'x' }],
  });
  let now = 1_700_000_000_000;
  const client = new ResourcePrometheusClient(new ResourceClient(fetcher), () => now);
  const strategy = withQuotedNames(newCompleteStrategy({ remote: client }), (n) => client.kindOf(n));
  const complete = async (doc: string, pos = doc.length): Promise<CompletionResult | null> => {
    const state = parsedState(doc, new PromQLExtension().asExtension());
    return strategy.promQL(new CompletionContext(state, pos, true));
  };
  return { fetcher, client, complete, advance: (ms: number) => (now += ms) };
}

function applyOf(result: CompletionResult | null, label: string): unknown {
  const option = result?.options.find((o) => o.label === label);
  if (!option) {
    throw new Error(`no completion ${label} in ${result?.options.map((o) => o.label).join(', ')}`);
  }
  return option.apply;
}

describe('names', () => {
  it.each([
    ['EndpointName', 'EndpointName'],
    ['aws.sagemaker.endpoint.name', '"aws.sagemaker.endpoint.name"'],
    ['@resource.host.id', '"@resource.host.id"'],
  ])('labelNameToken(%s)', (name, token) => {
    expect(labelNameToken(name)).toBe(token);
    expect(unquoteName(token)).toBe(name);
  });

  it.each([
    ['"plain"', 'plain'],
    ["'single \\' quote'", "single ' quote"],
    ['"esc \\" \\\\ \\n \\t"', 'esc " \\ \n \t'],
    ['"\\x41\\u00e9\\U0001F600\\101"', 'Aé😀A'],
    ['`raw \\n`', 'raw \\n'],
  ])('unquoteString(%s)', (literal, value) => {
    expect(unquoteString(literal)).toBe(value);
    // What quoteString writes reads back.
    expect(unquoteString(quoteString(value))).toBe(value);
  });

  it.each([
    [undefined, [], '{}'],
    ['up', [], 'up'],
    [
      'vllm:num_requests_running',
      [{ name: 'aws.sagemaker.endpoint.name', op: '=~', value: 'a|b' }],
      'vllm:num_requests_running{"aws.sagemaker.endpoint.name"=~"a|b"}',
    ],
    [
      'http.server.active_requests',
      [{ name: 'job', op: '=', value: 'x"y' }],
      '{"http.server.active_requests",job="x\\"y"}',
    ],
  ] as const)('selector(%s)', (metric, matchers, expected) => {
    expect(selector(metric, [...matchers])).toBe(expected);
  });

  it.each([
    ['i-0abc', 'i-0abc'],
    ['a.b', 'a\\.b'],
    ['x+(y)|[z]{2}^$*?\\', 'x\\+\\(y\\)\\|\\[z\\]\\{2\\}\\^\\$\\*\\?\\\\'],
  ])('regexEscape(%s) matches only itself', (value, escaped) => {
    expect(regexEscape(value)).toBe(escaped);
    expect(new RegExp(`^(?:${regexEscape(value)})$`).test(value)).toBe(true);
    expect(new RegExp(`^(?:${regexEscape(value)})$`).test(`${value}x`)).toBe(false);
  });

  it.each([
    ['up{a="b"}', 0, 0], // not a quote: i itself
    ['up{a="b"}', 5, 7],
    ["{a='x\\'y'}", 3, 8], // an escaped quote does not close
    ['`a"b`', 0, 4], // the other quote kinds do not close a backtick string
    ['"never closed', 0, 13], // text.length
  ] as const)('stringLiteralEnd(%s, %d)', (text, i, end) => {
    expect(stringLiteralEnd(text, i)).toBe(end);
  });
});

describe('insertionFor', () => {
  it.each([
    ['EndpointName', 'label', 'up{', undefined],
    ['aws.sagemaker.endpoint.name', 'label', 'up{', '"aws.sagemaker.endpoint.name"'],
    ['aws.sagemaker.endpoint.name', 'label', 'up{"', undefined],
    ['@resource.host.id', 'label', 'sum by (', '"@resource.host.id"'],
    ['vllm:num_requests_running', 'metric', 'sum(', undefined],
    ['http.server.active_requests', 'metric', 'sum(', '{"http.server.active_requests"}'],
    ['http.server.active_requests', 'metric', '{', '"http.server.active_requests"'],
  ] as const)('%s as %s after %s', (name, kind, before, expected) => {
    expect(insertionFor(name, kind, before)).toBe(expected);
  });

  it('tracks braces outside strings only', () => {
    expect(insideBraces('up{job="}"')).toBe(true);
    expect(insideBraces('up{job="x"} + ')).toBe(false);
  });
});

describe('completion from resources', () => {
  it('completes metric names and quotes dotted ones', async () => {
    const { complete, fetcher } = setup();
    const result = await complete('sum(');
    expect(applyOf(result, 'vllm:num_requests_running')).toBeUndefined();
    expect(applyOf(result, 'http.server.active_requests')).toBe('{"http.server.active_requests"}');
    expect(fetcher.calls.map((c) => c.path)).toContain('api/v1/label/__name__/values');
  });

  it('completes label names inside a selector, quoted when dotted, without __name__', async () => {
    const { complete, fetcher } = setup();
    // closeBrackets has added the closing brace by the time completion runs.
    const doc = 'vllm:num_requests_running{}';
    const result = await complete(doc, doc.length - 1);
    expect(applyOf(result, 'aws.sagemaker.endpoint.name')).toBe('"aws.sagemaker.endpoint.name"');
    expect(applyOf(result, '@resource.host.id')).toBe('"@resource.host.id"');
    expect(applyOf(result, 'EndpointName')).toBeUndefined();
    expect(result?.options.some((o) => o.label === '__name__')).toBe(false);
    const call = fetcher.calls.find((c) => c.path === 'api/v1/labels');
    expect(call?.params['match[]']).toEqual(['vllm:num_requests_running']);
  });

  it('completes grouping labels quoted', async () => {
    const { complete } = setup();
    const result = await complete('sum by (');
    expect(applyOf(result, 'aws.sagemaker.endpoint.name')).toBe('"aws.sagemaker.endpoint.name"');
  });

  it('completes values of a quoted dotted label, escaped, filtered by the metric', async () => {
    const { complete, fetcher } = setup();
    const doc = 'vllm:num_requests_running{"aws.sagemaker.endpoint.name"=""}';
    const result = await complete(doc, doc.length - 2);
    expect(applyOf(result, 'ep-a')).toBe('ep-a');
    expect(applyOf(result, 'ep"b')).toBe('ep\\"b');
    const call = fetcher.calls.find((c) => c.path === 'api/v1/label/aws.sagemaker.endpoint.name/values');
    expect(call?.params['match[]']).toEqual(['vllm:num_requests_running']);
  });
});

describe('ResourcePrometheusClient', () => {
  it('escapes @ in the label-values path and passes matchers as a selector', async () => {
    const { client, fetcher } = setup();
    await expect(client.labelValues('@resource.host.id', 'DCGM_FI_DEV_GPU_UTIL')).resolves.toEqual(['i-1']);
    expect(fetcher.calls[0].path).toBe('api/v1/label/%40resource.host.id/values');
    expect(fetcher.calls[0].params['match[]']).toEqual(['DCGM_FI_DEV_GPU_UTIL']);
  });

  it('sends the configured range in seconds and the discovery limit', async () => {
    const { client, fetcher } = setup();
    client.setRange({ from: dateTime(1_000_000), to: dateTime(4_600_000), raw: { from: 'a', to: 'b' } });
    await client.labelNames();
    expect(fetcher.calls[0].params).toEqual({ start: '1000', end: '4600', limit: 10000 });
  });

  it('reuses answers for a minute, then asks again', async () => {
    const { client, fetcher, advance } = setup();
    await client.metricNames();
    await client.metricNames();
    expect(fetcher.calls).toHaveLength(1);
    advance(CACHE_TTL_MS + 1);
    await client.metricNames();
    expect(fetcher.calls).toHaveLength(2);
  });

  it('does not cache failures', async () => {
    const fetcher = fakeResources({});
    const client = new ResourcePrometheusClient(new ResourceClient(fetcher));
    await expect(client.labelNames()).rejects.toThrow('unexpected resource call api/v1/labels');
    await expect(client.labelNames()).rejects.toThrow();
    expect(fetcher.calls).toHaveLength(2);
  });

  it('returns series label sets as maps and no metadata', async () => {
    const { client } = setup();
    const series = await client.series('up');
    expect(series[0].get('job')).toBe('x');
    await expect(client.metricMetadata()).resolves.toEqual({});
  });
});

describe('PromQL linter', () => {
  // The linter reads only view.state.
  const lint = (expr: string) => {
    const state = parsedState(expr, new PromQLExtension().asExtension());
    return templateAwareLinter().promQL()({ state } as never) as readonly Diagnostic[];
  };

  it.each([
    ...EXAMPLES.map((e) => e.expr),
    '{"http.server.active_requests", "@aws.region"=~"us-.*"}',
    'sum by ("@resource.host.id") (DCGM_FI_DEV_GPU_UTIL{"aws.sagemaker.endpoint.name"=~"$endpoint"})',
    'rate(vllm:generation_tokens_total[${__rate_interval}]) * $scale',
    'max_over_time(up[$__range:$__interval])',
  ])('accepts %s', (expr) => {
    expect(lint(expr)).toEqual([]);
  });

  it('judges a query longer than the first parse on its whole tree', () => {
    // EditorState.create parses 3000 characters at most; the rest must not read as an error.
    const endpoints = Array.from({ length: 400 }, (_, i) => `endpoint-${i}`).join('|');
    const long = `sum by ("@resource.host.id") (rate(vllm:request_success_total{"aws.sagemaker.endpoint.name"=~"${endpoints}"}[$__rate_interval]))`;
    expect(long.length).toBeGreaterThan(3000);
    expect(lint(long)).toEqual([]);
    expect(lint(long + ' +')).not.toEqual([]);
  });

  it('reports type errors at their position, variables or not', () => {
    const plain = lint('rate(up)');
    const withVariable = lint('rate($metric)');
    expect(plain.length).toBeGreaterThan(0);
    expect(withVariable.map((d) => d.from)).toEqual(plain.map((d) => d.from));
  });

  it.each([
    ['rate(x[$__rate_interval])', 'rate(x[1m              ])'],
    ['$metric{a="$v"}', 'v______{a="$v"}'],
    ['sum([[metric]])', 'sum(v_________)'],
  ])('masks %s', (expr, masked) => {
    expect(maskTemplateVariables(expr)).toBe(masked);
  });
});
