import { act, fireEvent, render, screen, within } from '@testing-library/react';
import { EditorView } from '@codemirror/view';
import React, { useMemo, useState } from 'react';

import { ResourcePrometheusClient } from '../promql/client';
import { DISCOVERY_LIMIT, ResourceClient } from '../resources';
import { fakeResources } from '../testing';
import { EditorMode } from '../types';
import { PromQLEditorModes } from './EditorModes';
import { groupMetrics } from './QueryBuilder';
import { withComboboxLayout } from '../components/testing';

function setup(
  initial: { expr: string; editorMode?: EditorMode },
  names = ['Invocations', 'vllm:prompt_tokens_total', 'my_custom_metric']
) {
  const fetcher = fakeResources({
    'api/v1/label/__name__/values': names,
    'api/v1/labels': ['__name__', 'aws.sagemaker.endpoint.name', 'EndpointName', '@resource.host.id'],
    'api/v1/label/aws.sagemaker.endpoint.name/values': ['ep-1', 'ep-2'],
  });
  const state = { current: initial };
  function Harness() {
    const [q, setQ] = useState(initial);
    const client = useMemo(() => new ResourcePrometheusClient(new ResourceClient(fetcher)), []);
    return (
      <PromQLEditorModes
        expr={q.expr}
        editorMode={q.editorMode}
        client={client}
        onRunQuery={() => {}}
        onChange={(patch) =>
          setQ((old) => {
            state.current = { ...old, ...patch };
            return state.current;
          })
        }
      />
    );
  }
  render(<Harness />);
  return { fetcher, state };
}

/** Lets pending resource answers (metric discovery, label values) reach the components. */
async function settle() {
  await act(async () => {});
}

/** Opens a Combobox by its accessible name, types to search, and picks the option. */
async function choose(scope: HTMLElement, label: string, option: string) {
  const input = within(scope).getByLabelText(label);
  fireEvent.focus(input);
  fireEvent.keyDown(input, { key: 'ArrowDown' });
  fireEvent.change(input, { target: { value: option } });
  const options = await screen.findAllByRole('option');
  const hit = options.find((o) => within(o).queryAllByText(option).length > 0);
  if (!hit) {
    throw new Error(`${label}: no option ${option} among ${options.map((o) => o.textContent).join(', ')}`);
  }
  fireEvent.click(hit);
}

// The tests open Combobox lists.
withComboboxLayout();

describe('Builder / Code toggle', () => {
  it('keeps an existing query in Code', () => {
    setup({ expr: 'sum(rate(vllm:prompt_tokens_total[5m]))' });
    expect(screen.getByTestId('promql-editor')).toBeInTheDocument();
    expect(screen.queryByTestId('query-builder')).not.toBeInTheDocument();
  });

  it('refuses a query it cannot represent, says why, and stays in Code', () => {
    const { state } = setup({ expr: 'rate(Invocations[5m])' });
    fireEvent.click(screen.getByLabelText('Builder'));
    expect(screen.getByTestId('builder-refused')).toHaveTextContent(
      'rate() on Invocations, a delta metric: use sum_over_time'
    );
    expect(screen.getByTestId('promql-editor')).toBeInTheDocument();
    expect(state.current.editorMode).toBeUndefined();
    // Fixed in Code, it opens in the builder.
    act(() => {
      const view = EditorView.findFromDOM(
        screen.getByTestId('promql-editor').querySelector('.cm-editor') as HTMLElement
      )!;
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: 'sum_over_time(Invocations[5m])' } });
    });
    expect(screen.queryByTestId('builder-refused')).not.toBeInTheDocument();
    fireEvent.click(screen.getByLabelText('Builder'));
    expect(state.current.editorMode).toBe('builder');
    expect(screen.getByTestId('builder-preview')).toHaveTextContent('sum_over_time(Invocations[5m])');
  });

  it('opens a representable query in its spelling and goes back to Code with the text', async () => {
    const { state } = setup({ expr: 'sum(sum_over_time(Invocations{EndpointName="e"}[5m])) by (EndpointName)' });
    fireEvent.click(screen.getByLabelText('Builder'));
    const written = 'sum by (EndpointName) (sum_over_time(Invocations{EndpointName="e"}[5m]))';
    expect(state.current).toEqual({ expr: written, editorMode: 'builder' });
    expect(screen.getByTestId('builder-preview')).toHaveTextContent(written);
    expect(screen.getByTestId('metric-kind')).toHaveTextContent('counter · delta · count');
    await settle();
    fireEvent.click(screen.getByLabelText('Code'));
    expect(state.current.editorMode).toBe('code');
    expect(screen.getByTestId('promql-editor')).toHaveTextContent(written);
  });
});

describe('a query changed from outside while the builder is open', () => {
  // Explore's query history, the dashboard JSON or another editor can replace the text.
  function open(expr: string) {
    const client = new ResourcePrometheusClient(new ResourceClient(fakeResources({})));
    const onChange = jest.fn();
    const props = { editorMode: 'builder' as const, client, onRunQuery: () => {}, onChange };
    const view = render(<PromQLEditorModes {...props} expr={expr} />);
    return { onChange, replace: (next: string) => view.rerender(<PromQLEditorModes {...props} expr={next} />) };
  }

  it('opens in Code, with the reason, when the builder cannot read it (never shows the old query)', async () => {
    const { replace, onChange } = open('sum (DCGM_FI_DEV_GPU_UTIL)');
    expect(screen.getByTestId('builder-preview')).toHaveTextContent('sum (DCGM_FI_DEV_GPU_UTIL)');
    replace('label_replace(DCGM_FI_DEV_GPU_UTIL, "a", "$1", "b", "(.*)")');
    expect(screen.queryByTestId('builder-preview')).not.toBeInTheDocument();
    expect(screen.getByTestId('promql-editor')).toHaveTextContent('label_replace');
    expect(screen.getByTestId('builder-refused')).toHaveTextContent('label_replace() is not a builder operation');
    expect(onChange).not.toHaveBeenCalled();
    await settle();
  });

  it('is shown by the builder when it can read it', async () => {
    const { replace } = open('sum (DCGM_FI_DEV_GPU_UTIL)');
    replace('max (DCGM_FI_DEV_GPU_TEMP)');
    expect(screen.getByTestId('builder-preview')).toHaveTextContent('max (DCGM_FI_DEV_GPU_TEMP)');
    await settle();
  });
});

describe('QueryBuilder', () => {
  it('builds metric → filter → operation → aggregation into PromQL', async () => {
    const { state, fetcher } = setup({ expr: '', editorMode: 'builder' });
    await settle();
    const first = screen.getByTestId('operand-0');
    await choose(first, 'Metric', 'Invocations');
    expect(state.current.expr).toBe('sum_over_time(Invocations[$__interval])');

    // Delta: rate and increase are not offered.
    fireEvent.keyDown(within(first).getByLabelText('Range function'), { key: 'ArrowDown' });
    const offered = (await screen.findAllByRole('option')).map((o) => o.textContent);
    expect(offered).toContain('sum_over_time');
    expect(offered).not.toContain('rate');
    expect(offered).not.toContain('increase');
    fireEvent.keyDown(within(first).getByLabelText('Range function'), { key: 'Escape' });

    fireEvent.click(within(first).getByRole('button', { name: 'Add filter' }));
    await choose(first, 'Filter 1 label', 'aws.sagemaker.endpoint.name');
    await settle();
    await choose(first, 'Filter 1 value', 'ep-2');
    expect(state.current.expr).toBe('sum_over_time(Invocations{"aws.sagemaker.endpoint.name"=~"ep-2"}[$__interval])');
    expect(
      fetcher.calls.find((c) => c.path === 'api/v1/label/aws.sagemaker.endpoint.name/values')?.params['match[]']
    ).toEqual(['Invocations']);

    // A second filter's values are those of the series the first one keeps.
    fireEvent.click(within(first).getByRole('button', { name: 'Add filter' }));
    await choose(first, 'Filter 2 label', '@resource.host.id');
    await settle();
    const hosts = fetcher.calls.filter((c) => c.path === 'api/v1/label/%40resource.host.id/values');
    expect(hosts[hosts.length - 1].params['match[]']).toEqual(['Invocations{"aws.sagemaker.endpoint.name"=~"ep-2"}']);
    fireEvent.click(within(first).getByRole('button', { name: 'Remove filter 2' }));

    await choose(first, 'Filter 1 operator', '!=');
    await choose(first, 'Aggregation', 'sum');
    await choose(first, 'Group by', '@resource.host.id');
    expect(state.current.expr).toBe(
      'sum by ("@resource.host.id") (sum_over_time(Invocations{"aws.sagemaker.endpoint.name"!="ep-2"}[$__interval]))'
    );

    // A ratio: errors / invocations.
    fireEvent.click(screen.getAllByRole('button', { name: 'Add operation with query' })[0]);
    await choose(screen.getByTestId('operand-1'), 'Metric', 'Invocations');
    expect(state.current.expr).toBe(
      'sum by ("@resource.host.id") (sum_over_time(Invocations{"aws.sagemaker.endpoint.name"!="ep-2"}[$__interval])) / sum_over_time(Invocations[$__interval])'
    );
    await settle();
    // Back in Code, the text is what the builder wrote.
    fireEvent.click(screen.getByLabelText('Code'));
    expect(screen.getByTestId('promql-editor')).toHaveTextContent('/ sum_over_time(Invocations[$__interval])');
  });

  it('writes histogram_quantile with a variable for a cumulative histogram', async () => {
    const { state } = setup({ expr: '', editorMode: 'builder' }, ['vllm:time_to_first_token_seconds']);
    await settle();
    await choose(screen.getByTestId('operand-0'), 'Metric', 'vllm:time_to_first_token_seconds');
    expect(state.current.expr).toBe(
      'histogram_quantile(0.99, sum (rate(vllm:time_to_first_token_seconds[$__rate_interval])))'
    );
    fireEvent.change(screen.getByLabelText('Quantile'), { target: { value: '$percentile' } });
    expect(state.current.expr).toBe(
      'histogram_quantile($percentile, sum (rate(vllm:time_to_first_token_seconds[$__rate_interval])))'
    );
    await settle();
  });

  it('opens a saved builder query in the builder', async () => {
    setup({ expr: 'DCGM_FI_DEV_GPU_UTIL > 90', editorMode: 'builder' });
    expect(screen.getByTestId('builder-preview')).toHaveTextContent('DCGM_FI_DEV_GPU_UTIL > 90');
    expect(within(screen.getByTestId('operand-1')).getByLabelText('Number')).toHaveValue('90');
    await settle();
  });

  it('keeps without when the aggregation changes, and names it', async () => {
    const { state } = setup({ expr: 'sum without (gpu) (DCGM_FI_DEV_GPU_UTIL)', editorMode: 'builder' });
    expect(screen.getByLabelText('Group without')).toBeInTheDocument();
    expect(screen.queryByLabelText('Group by')).not.toBeInTheDocument();
    await choose(screen.getByTestId('operand-0'), 'Aggregation', 'avg');
    expect(state.current.expr).toBe('avg without (gpu) (DCGM_FI_DEV_GPU_UTIL)');
    await settle();
  });

  it('offers as or-metrics only those the chosen function applies to (never a delta metric under rate)', async () => {
    setup({ expr: 'sum (rate(vllm:prompt_tokens_total[5m]))', editorMode: 'builder' }, [
      'Invocations',
      'vllm:prompt_tokens_total',
      'sglang:prompt_tokens_total',
      'DCGM_FI_DEV_GPU_UTIL',
      'my_custom_metric',
    ]);
    await settle();
    fireEvent.keyDown(within(screen.getByTestId('operand-0')).getByLabelText('Or metrics'), { key: 'ArrowDown' });
    // An option shows its label and the catalog's description; the label alone is compared.
    const offered = (await screen.findAllByRole('option')).map(
      (o) => o.querySelector('[class*="combobox-option-label"]')?.textContent
    );
    expect(offered).toContain('sglang:prompt_tokens_total');
    expect(offered).toContain('my_custom_metric');
    expect(offered).not.toContain('Invocations');
    expect(offered).not.toContain('DCGM_FI_DEV_GPU_UTIL');
    expect(offered).not.toContain('vllm:prompt_tokens_total');
  });

  it('offers only the range functions that apply to every or-metric', async () => {
    setup({
      expr: 'sum (sum_over_time(my_custom_metric[5m]) or sum_over_time(Invocations[5m]))',
      editorMode: 'builder',
    });
    await settle();
    fireEvent.keyDown(within(screen.getByTestId('operand-0')).getByLabelText('Range function'), { key: 'ArrowDown' });
    const offered = (await screen.findAllByRole('option')).map((o) => o.textContent);
    expect(offered).toContain('sum_over_time');
    expect(offered).not.toContain('rate');
    expect(offered).not.toContain('increase');
  });

  it.each([
    ['Range window', '5 m', 'A duration such as 5m or 1h30m, or a variable such as $__rate_interval'],
    ['Range window', '5m] or vector(1', 'A duration such as 5m or 1h30m, or a variable such as $__rate_interval'],
    ['Quantile', '0.9)', 'A number such as 0.99, or a variable such as $percentile'],
    ['Number', '1OO', 'A number such as 100, or a variable'],
  ])('flags a %s the query cannot carry (%s)', async (label, text, message) => {
    setup({
      expr: 'histogram_quantile(0.99, sum (rate(vllm:e2e_request_latency_seconds[5m]))) * 100',
      editorMode: 'builder',
    });
    await settle();
    expect(screen.queryByText(message)).not.toBeInTheDocument();
    fireEvent.change(screen.getByLabelText(label), { target: { value: text } });
    expect(screen.getByText(message)).toBeInTheDocument();
  });

  it('opens a saved builder query it cannot read in Code', () => {
    setup({ expr: 'label_replace(x, "a", "b", "c", "d")', editorMode: 'builder' });
    expect(screen.getByTestId('promql-editor')).toBeInTheDocument();
  });
});

/** The picker's options as [group, values] in their order. */
function byGroup(options: Array<{ group?: string; value: string }>): Array<[string, string[]]> {
  const groups: Array<[string, string[]]> = [];
  for (const o of options) {
    const last = groups[groups.length - 1];
    if (last && last[0] === o.group) {
      last[1].push(o.value);
    } else {
      groups.push([o.group ?? '', [o.value]]);
    }
  }
  return groups;
}

describe('metric picker', () => {
  it('offers the catalog metrics discovery found, grouped by family, and the others apart', () => {
    const { options, note } = groupMetrics([
      'Invocations',
      'vllm:prompt_tokens_total',
      'DCGM_FI_DEV_GPU_UTIL',
      'custom_total',
    ]);
    expect(note).toBeUndefined();
    expect(byGroup(options)).toEqual([
      ['SageMaker vended', ['Invocations']],
      ['vLLM', ['vllm:prompt_tokens_total']],
      ['GPU (DCGM)', ['DCGM_FI_DEV_GPU_UTIL']],
      ['Other', ['custom_total']],
    ]);
    expect(options[0].description).toBe('counter · delta · count');
  });

  it('says discovery failed, with the error, rather than that it found nothing', async () => {
    const client = new ResourcePrometheusClient(new ResourceClient(fakeResources({})));
    render(
      <PromQLEditorModes expr="" editorMode="builder" client={client} onRunQuery={() => {}} onChange={() => {}} />
    );
    await settle();
    expect(screen.getByTestId('metric-discovery-note')).toHaveTextContent(
      'Metric discovery failed (unexpected resource call api/v1/label/__name__/values): showing the whole catalog'
    );
  });

  it('offers the whole catalog when discovery stops at its limit (the list is then partial)', () => {
    const names = Array.from({ length: DISCOVERY_LIMIT }, (_, i) => `custom_${i}`);
    const groups = new Map(byGroup(groupMetrics(names).options));
    expect(groupMetrics(names).note).toBe(
      `Metric discovery stopped at ${DISCOVERY_LIMIT} names: showing the whole catalog`
    );
    expect(groups.get('SageMaker vended')).toContain('ModelLatency');
    expect(groups.get('Other')).toHaveLength(DISCOVERY_LIMIT);
  });

  it('falls back to the whole catalog when discovery finds nothing, and says so', () => {
    expect(groupMetrics(undefined).note).toBeUndefined(); // still asking
    const { options, note } = groupMetrics([]);
    expect(note).toMatch(/whole catalog/);
    expect(byGroup(options).map(([group]) => group)).toEqual([
      'SageMaker vended',
      'vLLM',
      'SGLang',
      'DJL Serving',
      'GPU (DCGM)',
      'Host (node exporter)',
      'Control plane events',
    ]);
  });
});
