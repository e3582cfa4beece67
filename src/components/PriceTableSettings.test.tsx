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

  it('names the bad line', () => {
    expect(parsePriceTable('ml.g5.2xlarge 1\nml.g5.12xlarge cheap').error).toMatch(/^Line 2: write/);
    expect(parsePriceTable('ml.g5.2xlarge 0').error).toMatch(/^Line 1/);
  });

  it('saves on blur, and keeps the settings while a line is bad', () => {
    const onChange = jest.fn();
    render(<PriceTableSettings onChange={onChange} />);
    const area = screen.getByRole('textbox');
    fireEvent.change(area, { target: { value: 'ml.g5.2xlarge' } });
    fireEvent.blur(area);
    expect(onChange).not.toHaveBeenCalled();
    expect(screen.getByText(/Line 1: write/)).toBeInTheDocument();
    fireEvent.change(area, { target: { value: 'ml.g5.2xlarge 1.2' } });
    fireEvent.blur(area);
    expect(onChange).toHaveBeenCalledWith([{ instanceType: 'ml.g5.2xlarge', usdPerHour: 1.2 }]);
  });
});
