import { fireEvent, render, screen } from '@testing-library/react';
import React, { useState } from 'react';

import { RegionsSelect } from './RegionField';

// Grafana 13.1's MultiCombobox reports one click on an option twice in Chromium
// (e2e/region.test.mjs catches it there), which jsdom does not reproduce: this picker reports
// each pick twice, as that one does.
jest.mock('@grafana/ui', () => ({
  ...jest.requireActual('@grafana/ui'),
  MultiCombobox: ({ value, onChange }: { value: string[]; onChange: (items: Array<{ value: string }>) => void }) => (
    <>
      {['us-west-2', 'eu-west-1'].map((r) => (
        <button
          key={r}
          onClick={() => {
            const items = [...value, r].map((v) => ({ value: v }));
            onChange(items);
            onChange(items);
          }}
        >
          {r}
        </button>
      ))}
    </>
  ),
}));

describe('RegionsSelect', () => {
  it('passes on a pick reported twice once, and later picks each once', () => {
    const changes: string[][] = [];
    function Harness() {
      const [values, setValues] = useState<string[]>([]);
      return (
        <RegionsSelect
          label="Region"
          width={20}
          options={['us-west-2', 'eu-west-1']}
          values={values}
          placeholder=""
          onChange={(v) => {
            changes.push(v);
            setValues(v);
          }}
        />
      );
    }
    render(<Harness />);
    fireEvent.click(screen.getByText('us-west-2'));
    fireEvent.click(screen.getByText('eu-west-1'));
    expect(changes).toEqual([['us-west-2'], ['us-west-2', 'eu-west-1']]);
  });
});
