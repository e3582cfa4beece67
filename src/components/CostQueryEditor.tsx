import { SelectableValue } from '@grafana/data';
import { InlineField, InlineFieldRow, RadioButtonGroup } from '@grafana/ui';
import React from 'react';

import { SageQuery } from '../types';
import { ScopeFields } from './HealthQueryEditor';
import { TextField } from './TextField';

/** The tables a cost query answers (pkg/models CostViews; docs/cost.md). */
export const COST_VIEWS: Array<SelectableValue<string>> = [
  { label: 'Spend', value: 'spend', description: 'per endpoint, IC and instance type: instance-hours × price' },
  { label: 'Per token', value: 'tokens', description: 'USD per million output and input tokens per model and IC' },
  { label: 'Idle', value: 'idle', description: 'GPUs with no copy and quiet copies, per day' },
  { label: 'Prices', value: 'prices', description: 'each instance type with its price, source and date' },
  { label: 'One more copy', value: 'fit', description: 'hourly cost of one more copy of the given GPUs' },
];

/** The views a cost query can group by a tag (pkg/models CostTagViews): prices and fit are per instance type. */
export const COST_TAG_VIEWS = ['spend', 'tokens', 'idle'];

interface Props {
  query: SageQuery;
  onChange: (query: SageQuery) => void;
  onRunQuery?: () => void;
}

/**
 * The editor of the cost query: view, scope and account filters, the copy size of the fit view,
 * and the tag key the spend views are grouped by.
 */
export function CostQueryEditor({ query, onChange, onRunQuery }: Props) {
  const view = query.view || 'spend';
  const text = (key: 'account' | 'gpusPerCopy' | 'groupByTag') => (value: string) => onChange({ ...query, [key]: value });
  return (
    <>
      <InlineFieldRow>
        <InlineField label="View" labelWidth={8}>
          <RadioButtonGroup<string>
            options={COST_VIEWS}
            value={view}
            onChange={(v) => {
              // A tag key left on a view that cannot group would fail the query.
              const { groupByTag, ...rest } = query;
              onChange(COST_TAG_VIEWS.includes(v) ? { ...query, view: v } : { ...rest, view: v });
              onRunQuery?.();
            }}
          />
        </InlineField>
        {view === 'fit' && (
          <TextField
            label="GPUs per copy"
            labelWidth={16}
            width={10}
            placeholder="1"
            tooltip="GPUs one more copy needs; template variables work"
            value={query.gpusPerCopy}
            onChange={text('gpusPerCopy')}
            onBlur={onRunQuery}
          />
        )}
        {COST_TAG_VIEWS.includes(view) && (
          <TextField
            label="Group by tag"
            labelWidth={14}
            width={16}
            placeholder="none"
            tooltip='A resource tag key, e.g. Team: one row per value, plus "untagged"; template variables work; empty = per resource'
            value={query.groupByTag}
            onChange={text('groupByTag')}
            onBlur={onRunQuery}
          />
        )}
      </InlineFieldRow>
      <InlineFieldRow>
        <ScopeFields query={query} onChange={onChange} onRunQuery={onRunQuery} />
        <TextField
          label="Account"
          labelWidth={10}
          width={20}
          placeholder="all"
          tooltip='12-digit account ids, several joined by ","; template variables work; empty = all'
          value={query.account}
          onChange={text('account')}
          onBlur={onRunQuery}
        />
      </InlineFieldRow>
    </>
  );
}
