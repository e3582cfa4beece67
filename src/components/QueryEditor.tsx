import { CoreApp, QueryEditorProps, SelectableValue, TimeRange } from '@grafana/data';
import { Combobox, ComboboxOption, InlineField, InlineFieldRow, RadioButtonGroup, Stack } from '@grafana/ui';
import React, { useEffect, useId, useMemo } from 'react';

import { PromQLEditorModes } from '../builder/EditorModes';
import type { SageDatasource } from '../datasource';
import { ResourcePrometheusClient } from '../promql/client';
import { isDiagnosis, isHealthQuery, QUERY_TYPE_OPTIONS, QueryType, queryTypeOf } from '../queryTypes';
import { QueryFormat, SageOptions, SageQuery } from '../types';
import { CostQueryEditor } from './CostQueryEditor';
import { HealthQueryEditor } from './HealthQueryEditor';
import { RegionField } from './RegionField';
import { TextField } from './TextField';

export type Props = QueryEditorProps<SageDatasource, SageQuery, SageOptions>;

export const FORMATS: Array<ComboboxOption<QueryFormat>> = [
  { label: 'Time series', value: 'time_series' },
  { label: 'Table', value: 'table' },
  { label: 'Heatmap', value: 'heatmap', description: 'Classic le buckets become heatmap rows' },
];

type RangeType = 'range' | 'instant' | 'both';

const RANGE_TYPES: Array<SelectableValue<RangeType>> = [
  { label: 'Range', value: 'range' },
  { label: 'Instant', value: 'instant' },
  { label: 'Both', value: 'both' },
];

function rangeTypeOf(q: SageQuery): RangeType {
  if (q.range && q.instant) {
    return 'both';
  }
  // Old queries with neither flag run as range queries, as in the backend.
  return q.instant && !q.range ? 'instant' : 'range';
}

/**
 * One resource-backed completion client per data source and region (the query's first,
 * interpolated, so completion offers what that region has), reading the panel's current range.
 */
export function useCompletionClient(datasource: SageDatasource, query: SageQuery, range?: TimeRange) {
  const region = datasource.firstRegion(query);
  const client = useMemo(
    () => new ResourcePrometheusClient(datasource.resources.inRegion(region)),
    [datasource, region]
  );
  useEffect(() => {
    client.setRange(range);
  }, [client, range]);
  return client;
}

export function QueryEditor(props: Props) {
  const { query, onChange, onRunQuery, datasource, range, app } = props;
  const client = useCompletionClient(datasource, query, range);
  // Grafana 11.6's Combobox takes no id from the surrounding field: the label points at this one.
  const formatId = `${useId()}-format`;
  const expr = query.expr ?? '';
  const queryType = queryTypeOf(query);
  const change = (patch: Partial<SageQuery>) => onChange({ ...query, ...patch });
  const text = (key: 'legendFormat' | 'interval') => (value: string) => change({ [key]: value });

  return (
    <Stack direction="column" gap={1}>
      {app !== CoreApp.UnifiedAlerting && (
        <RadioButtonGroup<QueryType>
          size="sm"
          options={QUERY_TYPE_OPTIONS}
          value={queryType}
          onChange={(v) => {
            change({ queryType: v });
            onRunQuery();
          }}
        />
      )}
      {/* Every query type runs in the region(s) it names. */}
      <InlineFieldRow>
        <RegionField datasource={datasource} query={query} onChange={onChange} onRunQuery={onRunQuery} />
      </InlineFieldRow>
      {queryType === 'cost' ? (
        <CostQueryEditor query={query} onChange={onChange} onRunQuery={onRunQuery} />
      ) : isHealthQuery(query) || isDiagnosis(query) ? (
        <HealthQueryEditor query={query} onChange={onChange} onRunQuery={onRunQuery} />
      ) : (
        <>
          <PromQLEditorModes
            expr={expr}
            editorMode={query.editorMode}
            client={client}
            onChange={change}
            onRunQuery={onRunQuery}
          />
          <InlineFieldRow>
            <TextField
              label="Legend"
              labelWidth={10}
              width={26}
              placeholder="__auto"
              tooltip='{{label}} templates, e.g. {{aws.sagemaker.endpoint.name}}; "__auto" picks one'
              value={query.legendFormat}
              onChange={text('legendFormat')}
              onBlur={onRunQuery}
            />
            <TextField
              label="Min step"
              labelWidth={10}
              width={10}
              placeholder="auto"
              tooltip="Lower bound of the step, e.g. 1m; defaults to the data source's Min step"
              value={query.interval}
              onChange={text('interval')}
              onBlur={onRunQuery}
            />
            <InlineField label="Format" labelWidth={8} htmlFor={formatId}>
              <Combobox<QueryFormat>
                id={formatId}
                width={16}
                options={FORMATS}
                value={query.format ?? 'time_series'}
                onChange={(v) => {
                  change({ format: v.value });
                  onRunQuery();
                }}
              />
            </InlineField>
            <InlineField label="Type" labelWidth={6}>
              <RadioButtonGroup<RangeType>
                options={RANGE_TYPES}
                value={rangeTypeOf(query)}
                onChange={(v) => {
                  change({ range: v !== 'instant', instant: v !== 'range' });
                  onRunQuery();
                }}
              />
            </InlineField>
          </InlineFieldRow>
        </>
      )}
    </Stack>
  );
}
