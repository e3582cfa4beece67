import { QueryEditorProps } from '@grafana/data';
import { InlineField, InlineFieldRow, Input, Stack } from '@grafana/ui';
import React, { ChangeEvent } from 'react';

import { SageAnnotation } from '../annotations';
import type { SageDatasource } from '../datasource';
import { getHints } from '../hints';
import { SageOptions, SageQuery } from '../types';
import { HintList } from './HintList';
import { PromQLEditor } from './PromQLEditor';
import { useCompletionClient } from './QueryEditor';

type Props = QueryEditorProps<SageDatasource, SageQuery, SageOptions> & {
  annotation?: SageAnnotation;
  onAnnotationChange?: (annotation: SageAnnotation) => void;
};

/** PromQL annotations: series with a value above zero become events, titled from a template. */
export function AnnotationQueryEditor({ query, onChange, annotation, onAnnotationChange, datasource, range }: Props) {
  const client = useCompletionClient(datasource, range);
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
        <InlineField label="Min step" labelWidth={12}>
          <Input
            id="annotation-step"
            width={10}
            placeholder="60s"
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
