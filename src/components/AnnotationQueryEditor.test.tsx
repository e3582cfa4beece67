import { fireEvent, render, screen } from '@testing-library/react';
import React from 'react';

import { SageAnnotation } from '../annotations';
import { fakeResources, testDatasource } from '../testing';
import { AnnotationQueryEditor } from './AnnotationQueryEditor';

describe('AnnotationQueryEditor', () => {
  it('edits the PromQL target and the title/tag templates on the annotation', () => {
    const annotation: SageAnnotation = {
      name: 'Scaling',
      enable: true,
      iconColor: 'red',
      target: { refId: 'Anno', expr: 'up' },
    };
    const onAnnotationChange = jest.fn();
    render(
      <AnnotationQueryEditor
        datasource={testDatasource(fakeResources({}))}
        query={annotation.target!}
        onChange={jest.fn()}
        onRunQuery={jest.fn()}
        annotation={annotation}
        onAnnotationChange={onAnnotationChange}
      />
    );
    fireEvent.change(screen.getByPlaceholderText('{{__name__}}'), {
      target: { value: 'Scale out {{aws.sagemaker.endpoint.name}}' },
    });
    expect(onAnnotationChange).toHaveBeenLastCalledWith({
      ...annotation,
      titleFormat: 'Scale out {{aws.sagemaker.endpoint.name}}',
    });
  });

  it('flags a selector without a metric name', () => {
    render(
      <AnnotationQueryEditor
        datasource={testDatasource(fakeResources({}))}
        query={{ refId: 'Anno', expr: '{"aws.sagemaker.scaling.direction"="ScaleOut"}' }}
        onChange={jest.fn()}
        onRunQuery={jest.fn()}
      />
    );
    expect(screen.getByTestId('hint-selector-without-metric')).toBeInTheDocument();
  });
});
