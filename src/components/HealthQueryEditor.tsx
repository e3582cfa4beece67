import { SelectableValue } from '@grafana/data';
import { InlineField, InlineFieldRow, InlineSwitch, Input, RadioButtonGroup } from '@grafana/ui';
import React, { ChangeEvent } from 'react';

import { hasEventFormat, queryTypeOf } from '../queryTypes';
import { QueryFormat, SageQuery } from '../types';

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

/** The endpoint and IC filters of the alarms, alarm history and inventory queries. */
export function ScopeFields({ query, onChange, onRunQuery }: ScopeProps) {
  const text = (key: 'endpoint' | 'inferenceComponent') => (e: ChangeEvent<HTMLInputElement>) =>
    onChange({ ...query, [key]: e.currentTarget.value });
  return (
    <>
      <InlineField
        label="Endpoint"
        labelWidth={14}
        tooltip='SageMaker endpoint names, several joined by ","; template variables work (multi-value too); empty = all'
      >
        <Input
          aria-label="Endpoint"
          width={30}
          placeholder="all"
          value={query.endpoint ?? ''}
          onChange={text('endpoint')}
          onBlur={onRunQuery}
        />
      </InlineField>
      <InlineField
        label="Inference component"
        labelWidth={20}
        tooltip='Inference component names, several joined by ","; template variables work; empty = all'
      >
        <Input
          aria-label="Inference component"
          width={30}
          placeholder="all"
          value={query.inferenceComponent ?? ''}
          onChange={text('inferenceComponent')}
          onBlur={onRunQuery}
        />
      </InlineField>
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
 * The editor of the query types read from CloudWatch alarms and the SageMaker inventory:
 * scope filters, the threshold fallback for alarms, and the format of the event types.
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
