import { InlineField, Input } from '@grafana/ui';
import React, { ChangeEvent } from 'react';

interface Props {
  label: string;
  labelWidth: number;
  width: number;
  placeholder: string;
  tooltip?: string;
  value?: string;
  onChange: (value: string) => void;
  /** Runs the query once the text is typed, not on every key. */
  onBlur?: () => void;
}

/** A labelled text field of a query editor, named by its label for screen readers and tests. */
export function TextField({ label, labelWidth, width, placeholder, tooltip, value, onChange, onBlur }: Props) {
  return (
    <InlineField label={label} labelWidth={labelWidth} tooltip={tooltip}>
      <Input
        aria-label={label}
        width={width}
        placeholder={placeholder}
        value={value ?? ''}
        onChange={(e: ChangeEvent<HTMLInputElement>) => onChange(e.currentTarget.value)}
        onBlur={onBlur}
      />
    </InlineField>
  );
}
