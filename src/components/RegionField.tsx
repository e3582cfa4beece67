import { SelectableValue } from '@grafana/data';
import { InlineField, MultiSelect } from '@grafana/ui';
import React, { useEffect, useState } from 'react';

import type { SageDatasource } from '../datasource';
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

const option = (value: string): SelectableValue<string> => ({ label: value, value });

interface RegionsSelectProps {
  label: string;
  width: number;
  options: string[];
  values: string[];
  placeholder: string;
  noOptionsMessage?: string;
  onChange: (values: string[]) => void;
}

/** Several regions as plain strings: picked from the options or typed. */
export function RegionsSelect({ label, options, values, onChange, ...rest }: RegionsSelectProps) {
  return (
    <MultiSelect<string>
      {...rest}
      aria-label={label}
      allowCustomValue
      options={options.map(option)}
      value={values.map(option)}
      onChange={(items: Array<SelectableValue<string>>) =>
        onChange(items.map((i) => (i.value ?? '').trim()).filter(Boolean))
      }
    />
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
        noOptionsMessage={found.error ? `No regions: ${found.error}` : 'Type a region name'}
        onChange={(regions) => {
          onChange({ ...query, region: regions.join(',') });
          onRunQuery?.();
        }}
      />
    </InlineField>
  );
}
