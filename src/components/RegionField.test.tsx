import { startCompletion } from '@codemirror/autocomplete';
import { EditorView } from '@codemirror/view';
import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import React from 'react';

import { fakeResources, TemplateVariable, testDatasource } from '../testing';
import { SageQuery } from '../types';
import { AnnotationQueryEditor } from './AnnotationQueryEditor';
import { QueryEditor } from './QueryEditor';
import { renderQueryEditor, withComboboxLayout } from './testing';

const VARIABLES: Record<string, TemplateVariable> = {
  region: { value: ['us-west-2', 'eu-west-1'], multi: true },
  endpoint: { value: 'chat' },
};

function setup(initial: SageQuery, Editor: typeof QueryEditor | typeof AnnotationQueryEditor = QueryEditor) {
  const fetcher = fakeResources({
    regions: ['us-east-1', 'us-west-2'],
    'api/v1/label/__name__/values': ['vllm:num_requests_running'],
    'api/v1/labels': ['aws.sagemaker.endpoint.name'],
  });
  const datasource = testDatasource(fetcher, VARIABLES, { defaultRegion: 'us-east-1' });
  return { fetcher, ...renderQueryEditor(datasource, initial, Editor) };
}

/** Lets pending resource answers reach the components. */
async function settle() {
  await act(async () => {});
}

async function openPicker(): Promise<string[]> {
  await settle();
  const input = screen.getByLabelText('Region');
  fireEvent.focus(input);
  fireEvent.keyDown(input, { key: 'ArrowDown' });
  return (await screen.findAllByRole('option')).map((o) => o.textContent ?? '');
}

async function pick(option: string) {
  const options = await screen.findAllByRole('option');
  const hit = options.find((o) => within(o).queryAllByText(option).length > 0);
  if (!hit) {
    throw new Error(`no option ${option} among ${options.map((o) => o.textContent).join(', ')}`);
  }
  fireEvent.click(hit);
}

// The tests open Combobox lists.
withComboboxLayout();

describe('Region picker (PromQL)', () => {
  it('offers the regions resource and the dashboard variables; empty shows the default region', async () => {
    const { fetcher } = setup({ refId: 'A', expr: 'up' });
    expect(screen.getByPlaceholderText('default (us-east-1)')).toBeInTheDocument();
    expect(await openPicker()).toEqual(['us-east-1', 'us-west-2', '$region', '$endpoint']);
    expect(fetcher.calls.filter((c) => c.path === 'regions')).toHaveLength(1);
  });

  it('writes the picked regions joined by "," and runs the query', async () => {
    const { last, onRunQuery } = setup({ refId: 'A', expr: 'up' });
    await openPicker();
    await pick('us-west-2');
    expect(last().region).toBe('us-west-2');
    expect(onRunQuery).toHaveBeenCalledTimes(1);
    await openPicker();
    await pick('$region');
    expect(last().region).toBe('us-west-2,$region');
  });

  // Each pick writes the region and runs the query once (a pick reported twice, as Chromium
  // gets from Grafana 13.1, is RegionsSelect.test.tsx's and e2e/region.test.mjs's case).
  it('reports each pick once to a real click, and runs the query once', async () => {
    const { changes, onRunQuery } = setup({ refId: 'A', expr: 'up' });
    await settle();
    const user = userEvent.setup();
    await user.click(screen.getByLabelText('Region'));
    await user.click(await screen.findByRole('option', { name: /us-west-2/ }));
    await user.click(await screen.findByRole('option', { name: /\$region/ }));
    expect(changes.map((q) => q.region)).toEqual(['us-west-2', 'us-west-2,$region']);
    expect(onRunQuery).toHaveBeenCalledTimes(2);
  });

  it('takes a typed region name not in the list', async () => {
    const { last } = setup({ refId: 'A', expr: 'up' });
    await openPicker();
    const input = screen.getByLabelText('Region');
    fireEvent.change(input, { target: { value: 'ap-south-1' } });
    await pick('ap-south-1');
    expect(last().region).toBe('ap-south-1');
  });

  it('shows a stored multi-region value and clears it back to the default', async () => {
    const { last } = setup({ refId: 'A', expr: 'up', region: 'us-east-1,eu-west-1' });
    await settle();
    // jsdom measures no width, so the picker shows the first region and counts the others.
    expect(screen.getByText('us-east-1')).toBeInTheDocument();
    fireEvent.click(screen.getByLabelText('Remove us-east-1'));
    expect(last().region).toBe('eu-west-1');
    fireEvent.click(screen.getByLabelText('Remove eu-west-1'));
    expect(last().region).toBe('');
    expect(screen.getByPlaceholderText('default (us-east-1)')).toBeInTheDocument();
  });

  it('flags a name that is not a region, with the fix, and not a variable', async () => {
    setup({ refId: 'A', expr: 'up', region: 'us-east1,$region' });
    await settle();
    expect(
      screen.getByText('"us-east1" is not an AWS region name (like us-east-1); did you mean us-east-1?')
    ).toBeInTheDocument();
    expect(screen.queryByText(/"\$region"/)).not.toBeInTheDocument();
  });

  it('says why the list is empty when the regions resource fails', async () => {
    const fetcher = fakeResources({});
    render(
      <QueryEditor
        datasource={testDatasource(fetcher)}
        query={{ refId: 'A', expr: 'up' }}
        onChange={() => {}}
        onRunQuery={() => {}}
      />
    );
    await settle();
    // Beside the field, not a row of the list: Grafana 11.6's list has no rows that cannot be picked.
    expect(screen.getByText('No regions: unexpected resource call regions; type a region name')).toBeInTheDocument();
    const input = screen.getByLabelText('Region');
    fireEvent.focus(input);
    fireEvent.keyDown(input, { key: 'ArrowDown' });
    await settle();
    const rows = screen.queryAllByRole('option').map((o) => o.textContent);
    expect(rows.some((r) => r?.startsWith('No regions'))).toBe(false);
  });
});

describe('region-aware discovery', () => {
  it('completes labels from the first region of the query, interpolated', async () => {
    const { fetcher } = setup({ refId: 'A', expr: 'vllm:num_requests_running{}', region: '$region' });
    const view = EditorView.findFromDOM(
      screen.getByTestId('promql-editor').querySelector('.cm-editor') as HTMLElement
    )!;
    view.dispatch({ selection: { anchor: 'vllm:num_requests_running{'.length } });
    startCompletion(view);
    await waitFor(() => expect(fetcher.calls.some((c) => c.path === 'api/v1/labels')).toBe(true));
    const discovery = fetcher.calls.filter((c) => c.path.startsWith('api/'));
    expect(discovery.map((c) => c.params.region)).toEqual(discovery.map(() => 'us-west-2'));
  });

  it("re-asks the builder's metric list in a newly picked region", async () => {
    const { fetcher } = setup({ refId: 'A', expr: '', editorMode: 'builder' });
    await settle();
    const metricCalls = () =>
      fetcher.calls.filter((c) => c.path === 'api/v1/label/__name__/values').map((c) => c.params.region);
    expect(metricCalls()).toEqual([undefined]);
    await openPicker();
    await pick('us-west-2');
    await settle();
    expect(metricCalls()).toEqual([undefined, 'us-west-2']);
  });
});

describe('Region picker (diagnosis, alarms, alarm history, inventory)', () => {
  it.each(['diagnosis', 'alarms', 'alarmHistory', 'inventory'] as const)('%s writes the region', async (queryType) => {
    const { last } = setup({ refId: 'A', queryType, endpoint: '$endpoint' });
    expect(await openPicker()).toEqual(['us-east-1', 'us-west-2', '$region', '$endpoint']);
    await pick('us-west-2');
    expect(last()).toMatchObject({ queryType, endpoint: '$endpoint', region: 'us-west-2' });
  });
});

describe('Region picker (annotations)', () => {
  it.each<[string, SageQuery]>([
    ['PromQL', { refId: 'Anno', expr: 'up' }],
    ['alarm transitions', { refId: 'Anno', queryType: 'alarmHistory', format: 'annotations' }],
  ])('%s annotations take a region', async (_, query) => {
    const { last } = setup(query, AnnotationQueryEditor);
    await openPicker();
    await pick('$region');
    expect(last().region).toBe('$region');
  });
});
