import { Diagnostic } from '@codemirror/lint';
import { PromQLExtension } from '@prometheus-io/codemirror-promql';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import React from 'react';

import { describeMetric, metricInfo } from '../builder/catalog';
import { ResourcePrometheusClient } from '../promql/client';
import { parsedState, templateAwareLinter } from '../promql/lint';
import { DISCOVERY_LIMIT, labelValuesPath, ResourceClient } from '../resources';
import { fakeResources } from '../testing';
import { matchersOf, MetricsBrowser, ROW_LIMIT, valueCounts } from './MetricsBrowser';

const HOST = '@resource.host.id';
const ENDPOINT = 'aws.sagemaker.endpoint.name';
const METRIC = 'DCGM_FI_DEV_GPU_UTIL';

/** n distinct instance ids from a fixed-seed generator (a 32-bit LCG), so runs are alike. */
function instanceIds(n: number, seed = 27): string[] {
  const out = new Set<string>();
  let x = seed;
  while (out.size < n) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out.add(`i-0${x.toString(16).padStart(8, '0')}${(out.size % 97).toString(16)}`);
  }
  return [...out];
}

const HOSTS = instanceIds(5000);
// Values CloudWatch could hold that need escaping: a quote, a backslash, regex metacharacters.
const ENDPOINTS = ['chat', 'odd "name" \\ a.b', 'code+(v2)'];

function setup() {
  const series = HOSTS.map((h, i) => ({
    __name__: METRIC,
    [HOST]: h,
    [ENDPOINT]: ENDPOINTS[i % ENDPOINTS.length],
    gpu: String(i % 8),
  }));
  const fetcher = fakeResources({
    'api/v1/label/__name__/values': ['vllm:num_requests_running', METRIC, 'my_custom_metric'],
    'api/v1/series': series,
    [labelValuesPath(HOST)]: HOSTS,
    [labelValuesPath(ENDPOINT)]: ENDPOINTS,
  });
  const onUse = jest.fn();
  render(<MetricsBrowser client={new ResourcePrometheusClient(new ResourceClient(fetcher))} onUse={onUse} />);
  return { fetcher, onUse };
}

const rows = (testId: string) => within(screen.getByTestId(testId)).queryAllByRole('listitem');
const selectorText = () => screen.getByTestId('browser-selector').textContent;

/** codemirror-promql's diagnostics for a query, as the code editor lints it. */
function lint(expr: string): readonly Diagnostic[] {
  const state = parsedState(expr, new PromQLExtension().asExtension());
  return templateAwareLinter().promQL()({ state } as never) as readonly Diagnostic[];
}

async function openHostValues() {
  fireEvent.click(await screen.findByRole('button', { name: new RegExp(`^${METRIC}`) }));
  fireEvent.click(await screen.findByRole('button', { name: new RegExp(`^${HOST}`) }));
  await screen.findByRole('textbox', { name: 'Search values' });
}

describe('MetricsBrowser', () => {
  it('lists the discovered metrics with type, temporality and unit from the catalog', async () => {
    setup();
    // While discovery asks, the catalog is listed; then what it found.
    expect(await screen.findByRole('button', { name: /^my_custom_metric/ }, { timeout: 5000 })).toHaveTextContent(
      'not in the catalog'
    );
    expect(rows('browser-metric-list')).toHaveLength(3);
    const gpu = screen.getByRole('button', { name: new RegExp(`^${METRIC}`) });
    expect(gpu).toHaveTextContent(`GPU (DCGM) · ${describeMetric(metricInfo(METRIC)!)}`);
    const vllm = screen.getByRole('button', { name: /^vllm:num_requests_running/ });
    expect(vllm).toHaveTextContent(`vLLM · ${describeMetric(metricInfo('vllm:num_requests_running')!)}`);
  });

  it('shows each label of the metric with its number of values, from one series call', async () => {
    const { fetcher } = setup();
    fireEvent.click(await screen.findByRole('button', { name: new RegExp(`^${METRIC}`) }));
    await screen.findByRole('textbox', { name: 'Search labels' });
    const labels = rows('browser-label-list').map((r) => r.textContent);
    expect(labels).toEqual([`${HOST}5000 values`, `${ENDPOINT}3 values`, 'gpu8 values']);
    expect(screen.queryByTestId('browser-series-capped')).not.toBeInTheDocument();
    expect(fetcher.calls.filter((c) => c.path === 'api/v1/series').map((c) => c.params['match[]'])).toEqual([[METRIC]]);
  });

  it('renders a bounded number of rows for 5,000 values, and a search narrows them', async () => {
    setup();
    await openHostValues();
    expect(rows('browser-value-list')).toHaveLength(ROW_LIMIT);
    const note = () => screen.getAllByTestId('browser-list-note').map((n) => n.textContent);
    expect(note()).toContain(`5,000 values; showing the first ${ROW_LIMIT}, search to narrow`);

    // A search (any case) shows exactly the values containing it, in order.
    const q = HOSTS[4321].slice(4, 9);
    const wanted = HOSTS.filter((h) => h.includes(q));
    expect(wanted.length).toBeGreaterThan(0);
    expect(wanted.length).toBeLessThan(ROW_LIMIT);
    fireEvent.change(screen.getByRole('textbox', { name: 'Search values' }), { target: { value: q.toUpperCase() } });
    const shown = rows('browser-value-list').map((r) => r.textContent!);
    expect(shown).toEqual(wanted);
    expect(note()).toContain(`${shown.length.toLocaleString('en-US')} of 5,000 values match`);
  });

  it('builds a selector the code editor accepts: quoted dotted and @ labels, escaped values', async () => {
    const { onUse } = setup();
    await openHostValues();
    const [a, b] = HOSTS;
    fireEvent.click(screen.getByRole('checkbox', { name: a }));
    expect(selectorText()).toBe(`${METRIC}{"${HOST}"="${a}"}`);
    fireEvent.click(screen.getByRole('checkbox', { name: b }));
    expect(selectorText()).toBe(`${METRIC}{"${HOST}"=~"${a}|${b}"}`);

    fireEvent.click(screen.getByRole('button', { name: new RegExp(`^${ENDPOINT}`) }));
    fireEvent.click(await screen.findByRole('checkbox', { name: ENDPOINTS[1] }));
    const one = `${METRIC}{"${HOST}"=~"${a}|${b}", "${ENDPOINT}"="odd \\"name\\" \\\\ a.b"}`;
    expect(selectorText()).toBe(one);
    // Two values are a regex: the dot, plus and parentheses are escaped, then the string.
    fireEvent.click(screen.getByRole('checkbox', { name: ENDPOINTS[2] }));
    const both = `${METRIC}{"${HOST}"=~"${a}|${b}", "${ENDPOINT}"=~"odd \\"name\\" \\\\\\\\ a\\\\.b|code\\\\+\\\\(v2\\\\)"}`;
    expect(selectorText()).toBe(both);
    for (const expr of [one, both]) {
      expect(lint(expr)).toEqual([]);
    }
    fireEvent.click(screen.getByRole('button', { name: 'Use query' }));
    expect(onUse).toHaveBeenCalledWith(both);
  });

  it('says when the counts come from a series answer cut at the discovery limit', async () => {
    const many = Array.from({ length: DISCOVERY_LIMIT }, (_, i) => ({ __name__: METRIC, [HOST]: `i-${i}` }));
    const fetcher = fakeResources({ 'api/v1/label/__name__/values': [METRIC], 'api/v1/series': many });
    render(<MetricsBrowser client={new ResourcePrometheusClient(new ResourceClient(fetcher))} onUse={jest.fn()} />);
    fireEvent.click(await screen.findByRole('button', { name: new RegExp(`^${METRIC}`) }));
    expect(await screen.findByTestId('browser-series-capped')).toHaveTextContent('first 10,000 series');
    expect(rows('browser-label-list').map((r) => r.textContent)).toEqual([`${HOST}10000 values`]);
  });

  it('offers the catalog, saying why, when metric discovery fails', async () => {
    const fetcher = fakeResources({});
    render(<MetricsBrowser client={new ResourcePrometheusClient(new ResourceClient(fetcher))} onUse={jest.fn()} />);
    await waitFor(() => expect(screen.getByText(/Metric discovery failed/)).toBeInTheDocument());
    expect(rows('browser-metric-list')).toHaveLength(ROW_LIMIT);
    fireEvent.change(screen.getByRole('textbox', { name: 'Search metrics' }), { target: { value: 'kv_cache' } });
    expect(rows('browser-metric-list').map((r) => r.textContent)).toEqual(
      expect.arrayContaining([expect.stringContaining('vllm:kv_cache_usage_perc')])
    );
  });
});

describe('valueCounts and matchersOf', () => {
  it('counts distinct values per label, without __name__, sorted by name', () => {
    const sets = [
      new Map([
        ['__name__', 'm'],
        ['b', '1'],
        ['a', 'x'],
      ]),
      new Map([
        ['__name__', 'm'],
        ['b', '2'],
        ['a', 'x'],
      ]),
    ];
    expect([...valueCounts(sets)]).toEqual([
      ['a', 1],
      ['b', 2],
    ]);
  });

  it('writes = for one value, an escaped alternation for several, nothing for none', () => {
    expect(
      matchersOf(
        new Map([
          ['a', ['x.y']],
          ['b', ['p|q', 'r']],
          ['c', []],
        ])
      )
    ).toEqual([
      { name: 'a', op: '=', value: 'x.y' },
      { name: 'b', op: '=~', value: 'p\\|q|r' },
    ]);
  });
});
