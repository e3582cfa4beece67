import { acceptCompletion, currentCompletions, selectedCompletion, startCompletion } from '@codemirror/autocomplete';
import { EditorView } from '@codemirror/view';
import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';

import { EXAMPLES } from '../examples';
import { fakeResources, testDatasource } from '../testing';
import { SageQuery } from '../types';
import { renderQueryEditor, withComboboxLayout } from './testing';

function setup(initial: SageQuery) {
  const fetcher = fakeResources({
    'api/v1/label/__name__/values': ['vllm:num_requests_running', 'Invocations'],
    'api/v1/labels': ['aws.sagemaker.endpoint.name', 'EndpointName'],
    'api/v1/series': [{ __name__: 'vllm:num_requests_running', 'aws.sagemaker.endpoint.name': 'chat' }],
  });
  const { changes, onRunQuery, last } = renderQueryEditor(testDatasource(fetcher), initial);
  const view = () =>
    EditorView.findFromDOM(screen.getByTestId('promql-editor').querySelector('.cm-editor') as HTMLElement)!;
  return { fetcher, changes, onRunQuery, view, last };
}

// The tests open Combobox lists.
withComboboxLayout();

describe('QueryEditor', () => {
  it('shows the query in the PromQL editor and writes edits back', () => {
    const { view, last } = setup({ refId: 'A', expr: 'vllm:num_requests_running' });
    expect(view().state.doc.toString()).toBe('vllm:num_requests_running');
    act(() => view().dispatch({ changes: { from: 0, insert: 'sum(' } }));
    expect(last().expr).toBe('sum(vllm:num_requests_running');
  });

  it('shows pitfall hints and drops them once the query is fixed', async () => {
    const { last } = setup({ refId: 'A', expr: 'sum(rate(Invocations[5m]))' });
    expect(screen.getByTestId('hint-rate-on-delta')).toBeInTheDocument();
    fireEvent.click(screen.getByRole('button', { name: 'Fix query' }));
    expect(last().expr).toBe('sum(sum_over_time(Invocations[5m]))');
    await waitFor(() => expect(screen.queryByTestId('hint-rate-on-delta')).not.toBeInTheDocument());
  });

  it('completes label names from the resources and inserts them quoted', async () => {
    const { view, fetcher, last } = setup({ refId: 'A', expr: 'vllm:num_requests_running{}' });
    const v = view();
    v.dispatch({ selection: { anchor: 'vllm:num_requests_running{'.length } });
    startCompletion(v);
    await waitFor(() =>
      expect(currentCompletions(v.state).map((c) => c.label)).toContain('aws.sagemaker.endpoint.name')
    );
    // Move the selection to the dotted label and accept it.
    const index = currentCompletions(v.state).findIndex((c) => c.label === 'aws.sagemaker.endpoint.name');
    for (let i = 0; selectedCompletion(v.state)?.label !== 'aws.sagemaker.endpoint.name' && i <= index; i++) {
      v.contentDOM.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowDown', bubbles: true }));
    }
    expect(selectedCompletion(v.state)?.label).toBe('aws.sagemaker.endpoint.name');
    // CodeMirror ignores accepting within interactionDelay (75ms) of the list opening.
    await new Promise((resolve) => setTimeout(resolve, 100));
    let accepted = false;
    act(() => {
      accepted = acceptCompletion(v);
    });
    expect(accepted).toBe(true);
    expect(last().expr).toBe('vllm:num_requests_running{"aws.sagemaker.endpoint.name"}');
    expect(fetcher.calls.find((c) => c.path === 'api/v1/labels')?.params['match[]']).toEqual([
      'vllm:num_requests_running',
    ]);
  });

  it('sets legend, min step and the range/instant type', () => {
    const { last, onRunQuery } = setup({ refId: 'A', expr: 'up', range: true });
    fireEvent.change(screen.getByPlaceholderText('__auto'), { target: { value: '{{aws.sagemaker.endpoint.name}}' } });
    expect(last().legendFormat).toBe('{{aws.sagemaker.endpoint.name}}');
    fireEvent.change(screen.getByPlaceholderText('auto'), { target: { value: '2m' } });
    expect(last().interval).toBe('2m');
    fireEvent.click(screen.getByLabelText('Both'));
    expect(last()).toMatchObject({ range: true, instant: true });
    fireEvent.click(screen.getByLabelText('Instant'));
    expect(last()).toMatchObject({ range: false, instant: true });
    expect(onRunQuery).toHaveBeenCalled();
  });

  it('sets the format', async () => {
    const { last } = setup({ refId: 'A', expr: 'up' });
    // The label names an id the editor gives the picker: Grafana 11.6's Combobox does not take
    // the id the field would make up (13's does), so a made-up one would point at nothing there.
    const input = screen.getByLabelText('Format');
    expect(input.id).toMatch(/-format$/);
    expect(screen.getByText('Format').closest('label')).toHaveAttribute('for', input.id);
    fireEvent.keyDown(screen.getByLabelText('Format'), { key: 'ArrowDown' });
    fireEvent.click(await screen.findByText('Heatmap'));
    expect(last().format).toBe('heatmap');
  });

  it('switches to the diagnosis query type with its own fields', () => {
    const { last } = setup({ refId: 'A', expr: 'up' });
    fireEvent.click(screen.getByLabelText('Diagnosis'));
    expect(last().queryType).toBe('diagnosis');
    expect(screen.queryByTestId('promql-editor')).not.toBeInTheDocument();
  });

  it('offers the starter queries while the query is empty; a click puts one in Code and runs it', () => {
    const { last, onRunQuery, view } = setup({ refId: 'A', expr: '', editorMode: 'builder' });
    const starters = screen.getByTestId('starter-queries');
    for (const ex of EXAMPLES) {
      expect(within(starters).getByRole('button', { name: ex.title })).toBeInTheDocument();
      expect(within(starters).getByText(ex.note)).toBeInTheDocument();
    }
    const pick = EXAMPLES.find((e) => e.title.startsWith('Cold-start'))!;
    fireEvent.click(within(starters).getByRole('button', { name: pick.title }));
    expect(last()).toMatchObject({ expr: pick.expr, editorMode: 'code' });
    expect(onRunQuery).toHaveBeenCalledTimes(1);
    expect(view().state.doc.toString()).toBe(pick.expr);
    expect(screen.queryByTestId('starter-queries')).not.toBeInTheDocument();
  });

  it('opens the metrics browser in Code and writes the selector it builds', async () => {
    const { last, onRunQuery } = setup({ refId: 'A', expr: 'up' });
    expect(screen.queryByTestId('metrics-browser')).not.toBeInTheDocument();
    fireEvent.click(screen.getByRole('button', { name: 'Metrics browser' }));
    fireEvent.click(await screen.findByRole('button', { name: /^vllm:num_requests_running/ }));
    await waitFor(() => expect(screen.getByTestId('browser-selector')).toHaveTextContent('vllm:num_requests_running'));
    fireEvent.click(screen.getByRole('button', { name: 'Use query' }));
    expect(last()).toMatchObject({ expr: 'vllm:num_requests_running', editorMode: 'code' });
    expect(onRunQuery).toHaveBeenCalled();
    expect(screen.queryByTestId('metrics-browser')).not.toBeInTheDocument();
  });
});
