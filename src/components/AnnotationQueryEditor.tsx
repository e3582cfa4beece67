import { QueryEditorProps, SelectableValue } from '@grafana/data';
import { InlineField, InlineFieldRow, Input, RadioButtonGroup, Stack } from '@grafana/ui';
import React, { ChangeEvent } from 'react';

import { SageAnnotation } from '../annotations';
import type { SageDatasource } from '../datasource';
import { getHints } from '../hints';
import { hasEventFormat, queryTypeOf } from '../queryTypes';
import { SageOptions, SageQuery } from '../types';
import { ScopeFields } from './HealthQueryEditor';
import { HintList } from './HintList';
import { PromQLEditor } from './PromQLEditor';
import { useCompletionClient } from './QueryEditor';
import { RegionField } from './RegionField';

type Props = QueryEditorProps<SageDatasource, SageQuery, SageOptions> & {
  annotation?: SageAnnotation;
  onAnnotationChange?: (annotation: SageAnnotation) => void;
};

type AnnotationSource = 'promql' | 'alarmHistory' | 'inventory' | 'changes';

export const ANNOTATION_SOURCES: Array<SelectableValue<AnnotationSource>> = [
  { label: 'PromQL', value: 'promql', description: 'Runs of samples above zero' },
  { label: 'Alarm transitions', value: 'alarmHistory', description: 'CloudWatch alarm state changes' },
  { label: 'Endpoint events', value: 'inventory', description: 'SageMaker endpoint and IC creations and updates' },
  { label: 'Changes', value: 'changes', description: 'CloudTrail changes: who changed what (image, config, copies, scaling)' },
];

/**
 * Annotations from PromQL (series with a value above zero become events, titled from a
 * template), or events the backend frames: alarm transitions, inventory events and CloudTrail changes.
 */
export function AnnotationQueryEditor(props: Props) {
  const { query, onChange, datasource } = props;
  const source: AnnotationSource = hasEventFormat(query) ? (queryTypeOf(query) as AnnotationSource) : 'promql';
  return (
    <Stack direction="column" gap={1}>
      <RadioButtonGroup<AnnotationSource>
        size="sm"
        options={ANNOTATION_SOURCES}
        value={source}
        onChange={(v) =>
          onChange(
            v === 'promql' ? { ...query, queryType: 'promql' } : { ...query, queryType: v, format: 'annotations' }
          )
        }
      />
      {source === 'promql' ? (
        <PromQLAnnotationFields {...props} />
      ) : (
        <InlineFieldRow>
          <RegionField datasource={datasource} query={query} onChange={onChange} />
          <ScopeFields query={query} onChange={onChange} />
        </InlineFieldRow>
      )}
    </Stack>
  );
}

function PromQLAnnotationFields({ query, onChange, annotation, onAnnotationChange, datasource, range }: Props) {
  const client = useCompletionClient(datasource, query, range);
  const expr = query.expr ?? '';
  const set = (key: 'step' | 'titleFormat' | 'textFormat' | 'tagKeys') => (e: ChangeEvent<HTMLInputElement>) => {
    if (annotation && onAnnotationChange) {
      onAnnotationChange({ ...annotation, [key]: e.currentTarget.value });
    }
  };
  return (
    <Stack direction="column" gap={1}>
      <PromQLEditor
        value={expr}
        client={client}
        onChange={(v) => onChange({ ...query, expr: v })}
        placeholder='e2e_duration{"aws.sagemaker.scaling.direction"="ScaleOut"}'
      />
      <HintList hints={getHints(expr)} onFix={(fixed) => onChange({ ...query, expr: fixed })} />
      <InlineFieldRow>
        <RegionField datasource={datasource} query={query} onChange={onChange} />
        <InlineField label="Min step" labelWidth={12}>
          <Input
            id="annotation-step"
            width={10}
            placeholder={datasource.interval}
            value={annotation?.step ?? ''}
            onChange={set('step')}
          />
        </InlineField>
        <InlineField label="Title" labelWidth={8} tooltip="{{label}} template">
          <Input
            id="annotation-title"
            width={36}
            placeholder="{{__name__}}"
            value={annotation?.titleFormat ?? ''}
            onChange={set('titleFormat')}
          />
        </InlineField>
      </InlineFieldRow>
      <InlineFieldRow>
        <InlineField label="Text" labelWidth={12} tooltip="{{label}} template">
          <Input id="annotation-text" width={36} value={annotation?.textFormat ?? ''} onChange={set('textFormat')} />
        </InlineField>
        <InlineField label="Tags" labelWidth={8} tooltip="Comma-separated label names whose values become tags">
          <Input id="annotation-tags" width={36} value={annotation?.tagKeys ?? ''} onChange={set('tagKeys')} />
        </InlineField>
      </InlineFieldRow>
    </Stack>
  );
}
