import { SelectableValue } from '@grafana/data';
import { InlineField, InlineFieldRow, InlineSwitch, RadioButtonGroup } from '@grafana/ui';
import React from 'react';

import { hasEventFormat, isDiagnosis, queryTypeOf } from '../queryTypes';
import { QueryFormat, SageQuery } from '../types';
import { TextField } from './TextField';

type EventFormat = Extract<QueryFormat, 'table' | 'annotations'>;

export const EVENT_FORMATS: Array<SelectableValue<EventFormat>> = [
  { label: 'Table', value: 'table' },
  { label: 'Annotations', value: 'annotations', description: 'time, title, text and tags for annotation queries' },
];

interface ScopeProps {
  query: SageQuery;
  onChange: (query: SageQuery) => void;
  onRunQuery?: () => void;
}

/**
 * The endpoint and IC filters of the diagnosis, alarms, alarm history and inventory queries.
 * All but diagnosis (one scope at a time) take several names.
 */
export function ScopeFields({ query, onChange, onRunQuery }: ScopeProps) {
  const several = isDiagnosis(query) ? '' : ', several joined by ","';
  const field = (key: 'endpoint' | 'inferenceComponent', label: string, labelWidth: number, what: string) => (
    <TextField
      label={label}
      labelWidth={labelWidth}
      width={30}
      placeholder="all"
      tooltip={`${what} name${several}; template variables work; empty = all`}
      value={query[key]}
      onChange={(value) => onChange({ ...query, [key]: value })}
      onBlur={onRunQuery}
    />
  );
  return (
    <>
      {field('endpoint', 'Endpoint', 14, 'SageMaker endpoint')}
      {field('inferenceComponent', 'Inference component', 20, 'Inference component')}
    </>
  );
}

/** Table or annotations, for the alarm history and inventory queries. */
export function EventFormatField({ query, onChange, onRunQuery }: ScopeProps) {
  return (
    <InlineField label="Format" labelWidth={8}>
      <RadioButtonGroup<EventFormat>
        options={EVENT_FORMATS}
        value={query.format === 'annotations' ? 'annotations' : 'table'}
        onChange={(format) => {
          onChange({ ...query, format });
          onRunQuery?.();
        }}
      />
    </InlineField>
  );
}

/**
 * The editor of the scoped query types (diagnosis, and those read from CloudWatch alarms and
 * the SageMaker inventory): scope filters, the threshold fallback for alarms, and the format
 * of the event types.
 */
export function HealthQueryEditor(props: ScopeProps) {
  const { query, onChange, onRunQuery } = props;
  return (
    <InlineFieldRow>
      <ScopeFields {...props} />
      {queryTypeOf(query) === 'alarms' && (
        <InlineField
          label="Threshold fallback"
          labelWidth={20}
          tooltip="Resources without any alarm get a state from the engine thresholds (KV cache, GPU memory), marked source = threshold"
        >
          <InlineSwitch
            aria-label="Threshold fallback"
            value={Boolean(query.thresholdFallback)}
            onChange={(e) => {
              onChange({ ...query, thresholdFallback: e.currentTarget.checked });
              onRunQuery?.();
            }}
          />
        </InlineField>
      )}
      {hasEventFormat(query) && <EventFormatField {...props} />}
    </InlineFieldRow>
  );
}
