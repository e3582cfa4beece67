import { act, fireEvent, render, screen, within } from '@testing-library/react';
import React, { useState } from 'react';

import { ResourceClient } from '../resources';
import { fakeResources, testDatasource } from '../testing';
import { resolveVariableQuery, VariableQuery } from '../variables';
import { VariableQueryEditor } from './VariableQueryEditor';
import { withComboboxLayout } from './testing';

async function setup(initial: VariableQuery | string) {
  const changes: VariableQuery[] = [];
  const datasource = testDatasource(
    fakeResources({ regions: ['us-east-1', 'us-west-2'] }),
    { region: { value: ['us-east-1', 'us-west-2'], multi: true } },
    { defaultRegion: 'us-east-1' }
  );
  function Harness() {
    const [query, setQuery] = useState<VariableQuery>(initial as VariableQuery);
    return (
      <VariableQueryEditor
        datasource={datasource}
        query={query}
        onRunQuery={() => {}}
        onChange={(q) => {
          changes.push(q);
          setQuery(q);
        }}
      />
    );
  }
  render(<Harness />);
  // The Region picker loads the regions resource after mounting; let that land inside act.
  await act(async () => {});
  return { last: () => changes[changes.length - 1] };
}

// The tests open Combobox lists.
withComboboxLayout();

describe('VariableQueryEditor', () => {
  it('builds a label_values query that resolves through the label-values resource', async () => {
    const { last } = await setup({ refId: 'v', query: '' });
    fireEvent.click(screen.getByLabelText('Label values'));
    fireEvent.blur(screen.getByLabelText('Label'), { target: { value: 'aws.sagemaker.endpoint.name' } });
    fireEvent.blur(screen.getByLabelText('Filter by selector'), { target: { value: 'DCGM_FI_DEV_GPU_UTIL' } });
    expect(last()).toEqual({
      refId: 'v',
      qryType: 'label_values',
      query: 'label_values(DCGM_FI_DEV_GPU_UTIL, "aws.sagemaker.endpoint.name")',
    });

    const fetcher = fakeResources({ 'api/v1/label/aws.sagemaker.endpoint.name/values': ['ep-a'] });
    const values = await resolveVariableQuery(last().query, new ResourceClient(fetcher));
    expect(values).toEqual([{ text: 'ep-a' }]);
    expect(fetcher.calls[0].path).toBe('api/v1/label/aws.sagemaker.endpoint.name/values');
    expect(fetcher.calls[0].params['match[]']).toEqual(['DCGM_FI_DEV_GPU_UTIL']);
  });

  it.each([
    ['Label names', 'Series selector', 'vllm:num_requests_running', 'label_names(vllm:num_requests_running)'],
    ['Metrics', 'Metric regex', 'vllm:.*', 'metrics(vllm:.*)'],
    ['Query result', 'Query', 'topk(3, up)', 'query_result(topk(3, up))'],
  ])('%s writes its classic form', async (kind, field, value, expected) => {
    const { last } = await setup({ refId: 'v', query: '' });
    fireEvent.click(screen.getByLabelText(kind));
    fireEvent.blur(screen.getByLabelText(field), { target: { value } });
    expect(last().query).toBe(expected);
  });

  it('opens a stored string query (dashboards as code) in its fields', async () => {
    await setup('label_values(DCGM_FI_DEV_GPU_UTIL, "aws.sagemaker.endpoint.name")' as unknown as VariableQuery);
    expect(screen.getByLabelText('Label')).toHaveValue('aws.sagemaker.endpoint.name');
    expect(screen.getByLabelText('Filter by selector')).toHaveValue('DCGM_FI_DEV_GPU_UTIL');
  });

  it('explains an unsupported stored query', async () => {
    await setup({ refId: 'v', query: 'up' });
    expect(screen.getByText(/Unsupported variable query "up"/)).toBeInTheDocument();
  });
});

describe('VariableQueryEditor inventory forms', () => {
  it('builds endpoints()', async () => {
    const { last } = await setup({ refId: 'v', query: '' });
    fireEvent.click(screen.getByLabelText('Endpoints'));
    expect(last()).toEqual({ refId: 'v', qryType: 'endpoints', query: 'endpoints()' });
  });

  it('builds inference_components of a variable and reads it back', async () => {
    const { last } = await setup({ refId: 'v', query: '' });
    fireEvent.click(screen.getByLabelText('Inference components'));
    expect(last().query).toBe('inference_components()');
    fireEvent.blur(screen.getByLabelText('Endpoint'), { target: { value: ' $endpoint ' } });
    expect(last()).toEqual({ refId: 'v', qryType: 'inference_components', query: 'inference_components($endpoint)' });
  });

  it('opens a stored inference_components query on its form', async () => {
    await setup('inference_components(chat)');
    expect(screen.getByLabelText('Inference components')).toBeChecked();
    expect(screen.getByLabelText('Endpoint')).toHaveValue('chat');
  });
});

describe('VariableQueryEditor regions()', () => {
  it('builds regions() and reopens it on its form', async () => {
    const { last } = await setup({ refId: 'v', query: '' });
    fireEvent.click(screen.getByLabelText('Regions'));
    expect(last()).toEqual({ refId: 'v', qryType: 'regions', query: 'regions()' });
  });

  it('opens a stored regions() (dashboards as code) on its form', async () => {
    await setup('regions()' as unknown as VariableQuery);
    expect(screen.getByLabelText('Regions')).toBeChecked();
    expect(screen.getByText('regions()')).toBeInTheDocument();
  });
});

describe('VariableQueryEditor Region', () => {
  async function openPicker(): Promise<string[]> {
    const input = screen.getByLabelText('Region');
    fireEvent.focus(input);
    fireEvent.keyDown(input, { key: 'ArrowDown' });
    return (await screen.findAllByRole('option')).map((o) => o.textContent ?? '');
  }

  it('stores the picked regions beside the classic form, which stays as it was', async () => {
    const { last } = await setup({ refId: 'v', query: 'label_values(up, "aws.sagemaker.endpoint.name")' });
    expect(await openPicker()).toEqual(['us-east-1', 'us-west-2', '$region']);
    const option = (await screen.findAllByRole('option')).find((o) => within(o).queryAllByText('$region').length > 0);
    fireEvent.click(option!);
    expect(last()).toEqual({ refId: 'v', query: 'label_values(up, "aws.sagemaker.endpoint.name")', region: '$region' });
    // A later change of the form keeps the region.
    fireEvent.blur(screen.getByLabelText('Label'), { target: { value: 'az' } });
    expect(last()).toEqual({ refId: 'v', qryType: 'label_values', query: 'label_values(up, az)', region: '$region' });
  });

  it('opens the stored object form (dashboards as code) with its region', async () => {
    await setup({ refId: 'v', query: 'endpoints()', region: 'us-west-2,$region' });
    expect(screen.getByLabelText('Endpoints')).toBeChecked();
    // jsdom measures no width, so the picker shows the first region and counts the others.
    expect(screen.getByText('us-west-2')).toBeInTheDocument();
    fireEvent.click(screen.getByLabelText('Remove us-west-2'));
    expect(screen.getByText('$region')).toBeInTheDocument();
  });

  it.each(['Regions', 'AWS region', 'AWS console'])('has no Region picker for %s, which ignores it', async (kind) => {
    await setup({ refId: 'v', query: '' });
    expect(screen.getByLabelText('Region')).toBeInTheDocument();
    fireEvent.click(screen.getByLabelText(kind));
    expect(screen.queryByLabelText('Region')).not.toBeInTheDocument();
  });
});
