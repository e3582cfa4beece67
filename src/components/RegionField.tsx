import { ComboboxOption, InlineField, MultiCombobox, Text } from '@grafana/ui';
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
  /** Given explicitly: Named sits between the field and the picker, so the field's does not reach it. */
  invalid?: boolean;
  onChange: (values: string[]) => void;
}

/**
 * Several regions as plain strings: picked from the options or typed. Named gives the picker
 * its name on Grafana 13 (11.6's MultiCombobox takes neither an id nor aria-labelledby).
 */
export function RegionsSelect({ label, width, options, values, onChange, ...rest }: RegionsSelectProps) {
  // @grafana/ui 13.1's MultiCombobox reports one click on an option twice in Chromium (not in
  // jsdom): e2e/region.test.mjs then sees the query run twice. A report of the regions last
  // reported is dropped; the values shown reset it.
  const shown = values.join(',');
  const reported = useRef(shown);
  useEffect(() => {
    reported.current = shown;
  }, [shown]);
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
          options={options.map(option)}
          value={values}
          onChange={(items) => {
            const regions = items.map((i) => i.value.trim()).filter(Boolean);
            if (regions.join(',') === reported.current) {
              return;
            }
            reported.current = regions.join(',');
            onChange(regions);
          }}
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
  // 11.6's Combobox options have no info row (infoOption), so the reason shows beside the field.
  return (
    <>
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
          invalid={errors.length > 0}
          onChange={(regions) => {
            onChange({ ...query, region: regions.join(',') });
            onRunQuery?.();
          }}
        />
      </InlineField>
      {found.error && (
        <Text color="secondary" variant="bodySmall">{`No regions: ${found.error}; type a region name`}</Text>
      )}
    </>
  );
}
