import { fireEvent, render, screen } from '@testing-library/react';
import React from 'react';

import { DataSourceApi } from '@grafana/data';
import { SageQuery } from '../types';
import { EXAMPLES } from '../examples';
import { QueryEditorHelp } from './QueryEditorHelp';

describe('QueryEditorHelp', () => {
  it('lists the SageMaker examples and hands the clicked one to the editor', () => {
    const onClickExample = jest.fn();
    render(
      <QueryEditorHelp
        datasource={{} as unknown as DataSourceApi<SageQuery>}
        query={{ refId: 'A' }}
        onClickExample={onClickExample}
      />
    );
    for (const ex of EXAMPLES) {
      expect(screen.getByText(ex.title)).toBeInTheDocument();
    }
    const kv = EXAMPLES.findIndex((e) => e.title.startsWith('KV cache'));
    fireEvent.click(screen.getAllByRole('button', { name: 'Use query' })[kv]);
    expect(onClickExample).toHaveBeenCalledWith({ refId: 'A', expr: EXAMPLES[kv].expr });
  });
});
