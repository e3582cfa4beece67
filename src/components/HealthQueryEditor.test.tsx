import { fireEvent, screen } from '@testing-library/react';

import { SageAnnotation } from '../annotations';
import { fakeResources, testDatasource } from '../testing';
import { SageQuery } from '../types';
import { AnnotationQueryEditor } from './AnnotationQueryEditor';
import { QueryEditor } from './QueryEditor';
import { renderQueryEditor } from './testing';

const datasource = testDatasource(fakeResources({}));

function setup(initial: SageQuery, Editor: typeof QueryEditor | typeof AnnotationQueryEditor = QueryEditor) {
  return renderQueryEditor(datasource, initial, Editor);
}

describe('query type picker', () => {
  it.each([
    ['Alarms', 'alarms'],
    ['Alarm history', 'alarmHistory'],
    ['Inventory', 'inventory'],
  ])('%s switches a PromQL query to %s and shows its filters instead of PromQL', (label, queryType) => {
    const { last, onRunQuery } = setup({ refId: 'A', expr: 'up' });
    expect(screen.getByTestId('promql-editor')).toBeInTheDocument();
    fireEvent.click(screen.getByLabelText(label));
    expect(last()).toMatchObject({ refId: 'A', queryType });
    expect(onRunQuery).toHaveBeenCalled();
    expect(screen.queryByTestId('promql-editor')).not.toBeInTheDocument();
    expect(screen.getByLabelText('Endpoint')).toBeInTheDocument();
    expect(screen.getByLabelText('Inference component')).toBeInTheDocument();
  });
});

describe('HealthQueryEditor', () => {
  it('edits the endpoint and IC filters, template variables included', () => {
    const { last, onRunQuery } = setup({ refId: 'A', queryType: 'alarms' });
    fireEvent.change(screen.getByLabelText('Endpoint'), { target: { value: '$endpoint' } });
    fireEvent.change(screen.getByLabelText('Inference component'), { target: { value: 'chat-llama,chat-qwen' } });
    fireEvent.blur(screen.getByLabelText('Inference component'));
    expect(last()).toEqual({
      refId: 'A',
      queryType: 'alarms',
      endpoint: '$endpoint',
      inferenceComponent: 'chat-llama,chat-qwen',
    });
    expect(onRunQuery).toHaveBeenCalled();
  });

  it('toggles the threshold fallback of alarms queries only', () => {
    const { last } = setup({ refId: 'A', queryType: 'alarms' });
    expect(screen.queryByLabelText('Annotations')).not.toBeInTheDocument();
    fireEvent.click(screen.getByLabelText('Threshold fallback'));
    expect(last()).toEqual({ refId: 'A', queryType: 'alarms', thresholdFallback: true });
  });

  it.each(['alarmHistory', 'inventory'] as const)('%s: picks table or annotations, table by default', (queryType) => {
    const { last } = setup({ refId: 'A', queryType });
    expect(screen.queryByLabelText('Threshold fallback')).not.toBeInTheDocument();
    expect(screen.getByLabelText('Table')).toBeChecked();
    fireEvent.click(screen.getByLabelText('Annotations'));
    expect(last()).toEqual({ refId: 'A', queryType, format: 'annotations' });
  });
});

describe('AnnotationQueryEditor sources', () => {
  it('switches a PromQL annotation to alarm transitions with the annotations format', () => {
    const annotation: SageAnnotation = {
      name: 'a',
      enable: true,
      iconColor: 'red',
      target: { refId: 'Anno', expr: 'up' },
    };
    const { last } = setup(annotation.target!, AnnotationQueryEditor);
    fireEvent.click(screen.getByLabelText('Alarm transitions'));
    expect(last()).toEqual({ refId: 'Anno', expr: 'up', queryType: 'alarmHistory', format: 'annotations' });
    expect(screen.queryByTestId('promql-editor')).not.toBeInTheDocument();
    fireEvent.change(screen.getByLabelText('Endpoint'), { target: { value: '$endpoint' } });
    expect(last().endpoint).toBe('$endpoint');
  });

  it('shows the PromQL fields again for PromQL', () => {
    const { last } = setup({ refId: 'Anno', queryType: 'inventory', format: 'annotations' }, AnnotationQueryEditor);
    expect(screen.getByLabelText('Endpoint events')).toBeChecked();
    fireEvent.click(screen.getByLabelText('PromQL'));
    expect(last().queryType).toBe('promql');
    expect(screen.getByTestId('promql-editor')).toBeInTheDocument();
  });
});
