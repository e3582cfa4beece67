import { fireEvent, render, screen } from '@testing-library/react';
import React from 'react';

import { formatPriceTable, parsePriceTable, PriceTableSettings } from './PriceTableSettings';

describe('price table', () => {
  it('reads lines with and without a region, and writes them back', () => {
    const { table, error } = parsePriceTable('ml.g5.12xlarge 5.1\n\n  ml.g5.2xlarge eu-west-1 1.3 ');
    expect(error).toBeUndefined();
    expect(table).toEqual([
      { instanceType: 'ml.g5.12xlarge', usdPerHour: 5.1 },
      { instanceType: 'ml.g5.2xlarge', region: 'eu-west-1', usdPerHour: 1.3 },
    ]);
    expect(formatPriceTable(table)).toBe('ml.g5.12xlarge 5.1\nml.g5.2xlarge eu-west-1 1.3');
    expect(parsePriceTable('  \n').table).toBeUndefined();
  });

  it.each([
    ['ml.g5.2xlarge 1\nml.g5.12xlarge cheap', 'Line 2: "cheap" is not an hourly price in USD (above 0, at most 10000)'],
    ['ml.g5.2xlarge 0', 'Line 1: "0" is not an hourly price in USD'],
    ['ml.g5.2xlarge Infinity', 'Line 1: "Infinity" is not an hourly price in USD'],
    ['ml.g5.2xlarge 20000', 'Line 1: "20000" is not an hourly price in USD'],
    ['g5.2xlarge 1.2', 'Line 1: "g5.2xlarge" is not a SageMaker instance type'],
    ['ml.g5.2xlarge', 'Line 1: no price'],
    ['ml.g5.2xlarge us-east-1 1.2 extra', 'Line 1: 4 words'],
  ])('names the bad line and what is wrong with it: %j', (text, problem) => {
    const { error, table } = parsePriceTable(text);
    expect(table).toBeUndefined();
    expect(error).toContain(problem);
    expect(error).toContain('write "ml.g5.2xlarge 1.21" or "ml.g5.2xlarge us-east-1 1.21"');
  });

  it('saves on blur, and keeps the settings while a line is bad', () => {
    const onChange = jest.fn();
    render(<PriceTableSettings onChange={onChange} />);
    const area = screen.getByRole('textbox');
    fireEvent.change(area, { target: { value: 'ml.g5.2xlarge' } });
    fireEvent.blur(area);
    expect(onChange).not.toHaveBeenCalled();
    expect(screen.getByText(/Line 1: no price/)).toBeInTheDocument();
    fireEvent.change(area, { target: { value: 'ml.g5.2xlarge 1.2' } });
    fireEvent.blur(area);
    expect(onChange).toHaveBeenCalledWith([{ instanceType: 'ml.g5.2xlarge', usdPerHour: 1.2 }]);
  });
});
