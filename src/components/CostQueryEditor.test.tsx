import { fireEvent, render, screen } from '@testing-library/react';
import React from 'react';

import { SageQuery } from '../types';
import { CostQueryEditor } from './CostQueryEditor';

describe('CostQueryEditor', () => {
  const base: SageQuery = { refId: 'A', queryType: 'cost' };

  it('switches the view and runs the query', () => {
    const onChange = jest.fn();
    const onRunQuery = jest.fn();
    render(<CostQueryEditor query={base} onChange={onChange} onRunQuery={onRunQuery} />);
    fireEvent.click(screen.getByText('Per token'));
    expect(onChange).toHaveBeenCalledWith({ ...base, view: 'tokens' });
    expect(onRunQuery).toHaveBeenCalled();
    expect(screen.queryByLabelText('GPUs per copy')).toBeNull();
  });

  it('asks for the copy size in the fit view only, and takes an account filter', () => {
    const onChange = jest.fn();
    render(<CostQueryEditor query={{ ...base, view: 'fit' }} onChange={onChange} />);
    fireEvent.change(screen.getByLabelText('GPUs per copy'), { target: { value: '$fit_gpus' } });
    expect(onChange).toHaveBeenLastCalledWith({ ...base, view: 'fit', gpusPerCopy: '$fit_gpus' });
    fireEvent.change(screen.getByLabelText('Account'), { target: { value: '111122223333' } });
    expect(onChange).toHaveBeenLastCalledWith({ ...base, view: 'fit', account: '111122223333' });
    expect(screen.queryByLabelText('Group by tag')).toBeNull();
  });

  it('groups the spend views by a tag key, and drops it for a view that cannot group', () => {
    const onChange = jest.fn();
    render(<CostQueryEditor query={{ ...base, view: 'idle', groupByTag: 'Team' }} onChange={onChange} />);
    fireEvent.change(screen.getByLabelText('Group by tag'), { target: { value: 'Cost Center' } });
    expect(onChange).toHaveBeenLastCalledWith({ ...base, view: 'idle', groupByTag: 'Cost Center' });
    fireEvent.click(screen.getByText('Per token'));
    expect(onChange).toHaveBeenLastCalledWith({ ...base, view: 'tokens', groupByTag: 'Team' });
    fireEvent.click(screen.getByText('Prices'));
    expect(onChange).toHaveBeenLastCalledWith({ ...base, view: 'prices' });
  });
});
