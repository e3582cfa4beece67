import { Button, Field, FieldSet, FieldValidationMessage, Input, Stack } from '@grafana/ui';
import React, { useState } from 'react';

import { endpointURLError, PROMQL_REGIONS, regionErrors, regionNameError } from '../regions';
import { SageOptions } from '../types';
import { RegionsSelect } from './RegionField';

type RegionOptions = Pick<SageOptions, 'allowedRegions' | 'regionEndpoints'>;

interface Props {
  jsonData: RegionOptions;
  onChange: (patch: RegionOptions) => void;
}

/** The settings of multi-region queries: which regions queries may name, and where each goes. */
export function RegionSettings({ jsonData, onChange }: Props) {
  const allowed = jsonData.allowedRegions ?? [];
  const errors = regionErrors(allowed, false);
  return (
    <FieldSet label="Regions">
      <Field
        label="Allowed regions"
        description="Regions a query may name (Region picker, $region variable). Empty: the default region, every region where CloudWatch serves PromQL and the regions with an endpoint below. A query naming another region gets an error and sends nothing."
        invalid={errors.length > 0}
        error={errors.join('; ')}
      >
        <RegionsSelect
          label="Allowed regions"
          width={60}
          options={PROMQL_REGIONS}
          values={allowed}
          invalid={errors.length > 0}
          placeholder="default region and every PromQL region"
          onChange={(regions) => onChange({ allowedRegions: regions.length ? regions : undefined })}
        />
      </Field>
      <RegionEndpoints value={jsonData.regionEndpoints} onChange={(regionEndpoints) => onChange({ regionEndpoints })} />
    </FieldSet>
  );
}

interface Row {
  region: string;
  url: string;
}

/** Rows with a region, first row of a region wins; undefined when none (the key is dropped). */
function toRecord(rows: Row[]): Record<string, string> | undefined {
  const record: Record<string, string> = {};
  for (const { region, url } of rows) {
    const r = region.trim();
    if (r && !(r in record)) {
      record[r] = url.trim();
    }
  }
  return Object.keys(record).length ? record : undefined;
}

/** What is wrong with one row, given the regions of the rows above it. */
function rowError(row: Row, above: Row[]): string | undefined {
  const region = row.region.trim();
  const url = row.url.trim();
  if (!region && !url) {
    return undefined;
  }
  if (!region) {
    return 'Name the region this endpoint serves, e.g. us-west-2';
  }
  if (above.some((r) => r.region.trim() === region)) {
    return `${region} has an endpoint above already; remove one of the rows`;
  }
  if (!url) {
    return `${region} needs an endpoint URL (or remove the row to use the default)`;
  }
  return regionNameError(region) ?? endpointURLError(url);
}

/**
 * Region → endpoint rows. Rows live in local state so a half-typed row survives; jsonData
 * gets every row that names a region.
 */
function RegionEndpoints({
  value,
  onChange,
}: {
  value?: Record<string, string>;
  onChange: (v: Record<string, string> | undefined) => void;
}) {
  const [rows, setRows] = useState<Row[]>(() => Object.entries(value ?? {}).map(([region, url]) => ({ region, url })));
  const update = (next: Row[]) => {
    setRows(next);
    onChange(toRecord(next));
  };
  const set = (i: number, patch: Partial<Row>) => update(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  return (
    <Field
      label="Endpoints per region"
      description="Base URL of a region's requests, e.g. one local emulator per region; each request is signed for its region. A region without a row uses Endpoint above when it is set (one endpoint for all regions), else https://monitoring.<region>.amazonaws.com."
    >
      <Stack direction="column" gap={1}>
        {rows.map((row, i) => {
          const error = rowError(row, rows.slice(0, i));
          return (
            <div key={i}>
              <Stack direction="row" gap={1}>
                <Input
                  aria-label={`Region of endpoint ${i + 1}`}
                  width={20}
                  placeholder="us-west-2"
                  value={row.region}
                  onChange={(e) => set(i, { region: e.currentTarget.value })}
                />
                <Input
                  aria-label={`Endpoint URL ${i + 1}`}
                  width={48}
                  placeholder="https://monitoring.us-west-2.amazonaws.com"
                  value={row.url}
                  onChange={(e) => set(i, { url: e.currentTarget.value })}
                />
                <Button
                  variant="secondary"
                  icon="trash-alt"
                  aria-label={`Remove endpoint ${i + 1}`}
                  onClick={() => update(rows.filter((_, j) => j !== i))}
                />
              </Stack>
              {error && <FieldValidationMessage>{error}</FieldValidationMessage>}
            </div>
          );
        })}
        <div>
          <Button variant="secondary" icon="plus" onClick={() => setRows([...rows, { region: '', url: '' }])}>
            Add region endpoint
          </Button>
        </div>
      </Stack>
    </Field>
  );
}
