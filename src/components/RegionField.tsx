import { ComboboxOption, InlineField, MultiCombobox } from '@grafana/ui';
import React, { useEffect, useRef, useState } from 'react';

import type { SageDatasource } from '../datasource';
import { Named } from './Named';
import { regionErrors, splitRegions } from '../regions';

/** Any query with a region field: SageQuery, or a variable query. */
interface Props<Q extends { region?: string }> {
  datasource: SageDatasource;
  query: Q;
  onChange: (query: Q) => void;
  onRunQuery?: () => void;
}

interface Found {
  regions: string[];
  error?: string;
}

/** The regions resource's answer for one data source, fetched once per mounted picker. */
function useRegions(datasource: SageDatasource): Found {
  const [found, setFound] = useState<Found>({ regions: [] });
  useEffect(() => {
    let live = true;
    datasource.resources.regions().then(
      (regions) => live && setFound({ regions }),
      (e: Error) => live && setFound({ regions: [], error: e.message })
    );
    return () => {
      live = false;
    };
  }, [datasource]);
  return found;
}

const option = (value: string): ComboboxOption<string> => ({ label: value, value });

interface RegionsSelectProps {
  label: string;
  width: number;
  options: string[];
  values: string[];
  placeholder: string;
  /** Shown in the list as a row that cannot be picked, e.g. why the list is empty. */
  notice?: string;
  onChange: (values: string[]) => void;
}

/** Several regions as plain strings: picked from the options or typed. */
export function RegionsSelect({ label, width, options, values, notice, onChange, ...rest }: RegionsSelectProps) {
  // MultiCombobox has no message for an empty list: a notice is an info row instead.
  const rows = options.map(option);
  if (notice) {
    rows.push({ label: notice, value: '', infoOption: true });
  }
  return (
    <Named name={label}>
      {(id) => (
        <MultiCombobox<string>
          {...rest}
          aria-labelledby={id}
          // A fixed width shows one region and "+n"; growing with its pills shows them all.
          width="auto"
          minWidth={width}
          maxWidth={2 * width}
          createCustomValue
          options={rows}
          value={values}
          onChange={(items) => onChange(items.map((i) => i.value.trim()).filter(Boolean))}
        />
      )}
    </Named>
  );
}

/**
 * The query's region(s): the regions the data source finds data in, the dashboard's variables
 * or any typed name; several are joined by "," and each is queried. Empty = the data source's
 * default region.
 */
export function RegionField<Q extends { region?: string }>({ datasource, query, onChange, onRunQuery }: Props<Q>) {
  const found = useRegions(datasource);
  const values = splitRegions(query.region);
  const options = Array.from(new Set([...found.regions, ...datasource.variableOptions(), ...values]));
  const errors = regionErrors(values, true);
  // The region last handed to onChange, or the query's once it re-renders with another.
  const written = useRef(query.region ?? '');
  useEffect(() => {
    written.current = query.region ?? '';
  }, [query.region]);
  return (
    <InlineField
      label="Region"
      labelWidth={10}
      tooltip="Regions to query, e.g. us-west-2 or $region; with several, each is queried and series get an @aws.region label. Empty = the data source's default region."
      invalid={errors.length > 0}
      error={errors.join('; ')}
    >
      <RegionsSelect
        label="Region"
        width={36}
        options={options}
        values={values}
        placeholder={datasource.region ? `default (${datasource.region})` : 'default region'}
        notice={found.error && `No regions: ${found.error}; type a region name`}
        onChange={(regions) => {
          const region = regions.join(',');
          // MultiCombobox can report one pick twice (a click in Chromium): run the query once.
          if (region === written.current) {
            return;
          }
          written.current = region;
          onChange({ ...query, region });
          onRunQuery?.();
        }}
      />
    </InlineField>
  );
}
