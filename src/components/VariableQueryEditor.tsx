import { QueryEditorProps, SelectableValue } from '@grafana/data';
import { InlineField, Input, RadioButtonGroup, Stack, Text } from '@grafana/ui';
import React, { useState } from 'react';

import type { SageDatasource } from '../datasource';
import { SageOptions, SageQuery } from '../types';
import {
  formatVariableQuery,
  parseVariableQuery,
  ParsedVariableQuery,
  toVariableQuery,
  VariableQuery,
  VariableQueryKind,
} from '../variables';
import { RegionField } from './RegionField';

type Props = QueryEditorProps<SageDatasource, SageQuery, SageOptions, VariableQuery>;

const KINDS: Array<SelectableValue<VariableQueryKind>> = [
  { label: 'Label names', value: 'label_names' },
  { label: 'Label values', value: 'label_values' },
  { label: 'Metrics', value: 'metrics' },
  { label: 'Query result', value: 'query_result' },
  { label: 'Endpoints', value: 'endpoints', description: 'Every SageMaker endpoint (inventory), GPU metrics or not' },
  { label: 'Inference components', value: 'inference_components', description: 'From the SageMaker inventory' },
  {
    label: 'Regions',
    value: 'regions',
    description:
      'Regions where the credentials find SageMaker metrics (else the Allowed regions), for a region variable',
  },
  { label: 'AWS region', value: 'aws_region', description: "The data source's region (for console links)" },
  { label: 'AWS console', value: 'aws_console', description: "The AWS console's origin in the data source's region" },
];

function parseOrDefault(
  text: string,
  kind: VariableQueryKind | undefined
): { parsed: ParsedVariableQuery; error?: string } {
  if (!text.trim()) {
    return { parsed: emptyOf(kind ?? 'label_values') };
  }
  try {
    return { parsed: parseVariableQuery(text) };
  } catch (e) {
    return { parsed: emptyOf(kind ?? 'label_values'), error: (e as Error).message };
  }
}

function emptyOf(kind: VariableQueryKind): ParsedVariableQuery {
  switch (kind) {
    case 'label_names':
      return { kind };
    case 'label_values':
      return { kind, label: '' };
    case 'metrics':
      return { kind, regex: '' };
    case 'query_result':
      return { kind, expr: '' };
    case 'endpoints':
    case 'inference_components':
    case 'aws_region':
    case 'aws_console':
    case 'regions':
      return { kind };
  }
}

/** The forms that answer without a region: the region list itself and the data source's own settings. */
const REGIONLESS: VariableQueryKind[] = ['regions', 'aws_region', 'aws_console'];

/**
 * Structured editor for query variables. It always stores the classic string form, which
 * dashboards as code and Prometheus dashboards use, so both edit paths resolve the same way;
 * the regions to list from are stored beside it, as a query's region field.
 */
export function VariableQueryEditor({ datasource, query: stored, onChange }: Props) {
  const query = toVariableQuery(stored);
  const initial = parseOrDefault(query.query, query.qryType);
  const [draft, setDraft] = useState<ParsedVariableQuery>(initial.parsed);

  const commit = (next: ParsedVariableQuery) => {
    setDraft(next);
    const complete =
      (next.kind === 'label_values' && next.label) ||
      (next.kind === 'metrics' && next.regex) ||
      (next.kind === 'query_result' && next.expr) ||
      next.kind === 'label_names' ||
      next.kind === 'endpoints' ||
      next.kind === 'inference_components' ||
      next.kind === 'aws_region' ||
      next.kind === 'aws_console' ||
      next.kind === 'regions';
    const text = complete ? formatVariableQuery(next) : '';
    onChange({ ...query, qryType: next.kind, query: text });
  };

  const selectorField = (value: string | undefined, update: (v: string) => void, label: string) => (
    <ArgField
      label={label}
      tooltip="Series selector naming the metric; template variables work"
      placeholder='DCGM_FI_DEV_GPU_UTIL{"aws.sagemaker.endpoint.name"=~"$endpoint"}'
      value={value ?? ''}
      onCommit={update}
    />
  );

  return (
    <Stack direction="column" gap={1}>
      <RadioButtonGroup<VariableQueryKind>
        options={KINDS}
        value={draft.kind}
        onChange={(kind) => commit(emptyOf(kind))}
      />
      {!REGIONLESS.includes(draft.kind) && <RegionField datasource={datasource} query={query} onChange={onChange} />}
      {draft.kind === 'label_names' &&
        selectorField(draft.match, (m) => commit({ kind: 'label_names', match: m || undefined }), 'Series selector')}
      {draft.kind === 'label_values' && (
        <>
          <ArgField
            label="Label"
            grow={false}
            tooltip="Dotted names work as they are: aws.sagemaker.endpoint.name"
            placeholder="aws.sagemaker.endpoint.name"
            value={draft.label}
            onCommit={(label) => commit({ ...draft, label })}
          />
          {selectorField(draft.match, (m) => commit({ ...draft, match: m || undefined }), 'Filter by selector')}
        </>
      )}
      {draft.kind === 'metrics' && (
        <ArgField
          label="Metric regex"
          tooltip="Matched against the whole name"
          placeholder="vllm:.*"
          value={draft.regex}
          onCommit={(regex) => commit({ kind: 'metrics', regex })}
        />
      )}
      {draft.kind === 'query_result' && (
        <ArgField
          label="Query"
          tooltip="Instant PromQL query; each sample becomes a value"
          placeholder='topk(5, sum by ("@resource.host.id") (DCGM_FI_DEV_GPU_UTIL))'
          value={draft.expr}
          onCommit={(expr) => commit({ kind: 'query_result', expr })}
        />
      )}
      {draft.kind === 'inference_components' && (
        <ArgField
          label="Endpoint"
          tooltip='Only the ICs of these endpoints: a name, several joined by ",", or a variable such as $endpoint; empty = every IC'
          placeholder="$endpoint"
          value={draft.endpoint ?? ''}
          onCommit={(endpoint) => commit({ kind: 'inference_components', endpoint: endpoint || undefined })}
        />
      )}
      {initial.error && <Text color="error">{initial.error}</Text>}
      <Text color="secondary" variant="bodySmall">
        Stored as: <code>{query.query || '(incomplete)'}</code>
      </Text>
    </Stack>
  );
}

/** One free-text argument of the variable query; it commits, trimmed, when the input loses focus. */
function ArgField(props: {
  label: string;
  tooltip: string;
  placeholder: string;
  value: string;
  onCommit: (value: string) => void;
  grow?: boolean;
}) {
  const { label, tooltip, placeholder, value, onCommit, grow = true } = props;
  return (
    <InlineField label={label} labelWidth={20} grow={grow} tooltip={tooltip}>
      <Input
        aria-label={label}
        placeholder={placeholder}
        defaultValue={value}
        onBlur={(e) => onCommit(e.currentTarget.value.trim())}
      />
    </InlineField>
  );
}
