import { Field, Input } from '@grafana/ui';
import React from 'react';

type InputFieldProps = {
  id: string;
  label: string;
  description: string;
  /** The problem and its fix, shown under the input. */
  error?: string;
} & React.ComponentProps<typeof Input>;

/** A labelled input of the config page; the input's id ties the label to it. */
export function InputField({ id, label, description, error, ...input }: InputFieldProps) {
  return (
    <Field label={label} htmlFor={id} description={description} invalid={Boolean(error)} error={error}>
      <Input id={id} width={20} invalid={Boolean(error)} {...input} />
    </Field>
  );
}

type NumberFieldProps = Omit<InputFieldProps, 'type' | 'value' | 'onChange' | 'placeholder'> & {
  value?: number;
  /** The default an empty field means. */
  placeholder: number;
  /** Undefined when the field is emptied: the key is dropped and the default applies. */
  onChange: (value: number | undefined) => void;
};

/** A number setting: empty means the default, shown as the placeholder. */
export function NumberField({ value, placeholder, onChange, ...field }: NumberFieldProps) {
  return (
    <InputField
      {...field}
      type="number"
      placeholder={String(placeholder)}
      value={value ?? ''}
      onChange={(e) => {
        const raw = e.currentTarget.value.trim();
        const n = raw === '' ? NaN : Number(raw);
        onChange(Number.isNaN(n) ? undefined : n);
      }}
    />
  );
}
