// The "filters" page: what Grafana's Explore and a dashboard with a Filters (ad-hoc)
// variable ask of the data source. Explore: an instant table whose cells and legend entries
// filter for or out (toggleQueryFilter, modifyQuery). Dashboard: key and value pickers fed by
// getTagKeys/getTagValues, and panels of every query type run with the chosen filters, each
// panel making the lookups its filter menus make.
import { AdHocVariableFilter, CoreApp, DataFrame, MetricFindValue } from '@grafana/data';
import { Button, Stack } from '@grafana/ui';
import React, { useEffect, useState } from 'react';
import { lastValueFrom } from 'rxjs';

import { TagLookup } from '../../src/adhoc';
import { ResourceClient } from '../../src/resources';
import { SageDatasource } from '../../src/datasource';
import { SageQuery } from '../../src/types';
import { lastHour, panelRequest } from './request';

/** The rows of an instant query's frames: labels and value of each series. */
function rows(frames: DataFrame[]): Array<{ labels: Record<string, string>; value: number }> {
  return frames.flatMap((f) => {
    const value = f.fields.find((x) => x.type === 'number');
    if (!value) {
      return [];
    }
    // A table frame has one column per label; a time series frame carries them on the value.
    const labelFields = f.fields.filter((x) => x.type === 'string');
    return Array.from({ length: f.length }, (_, i) => ({
      labels: labelFields.length
        ? Object.fromEntries(labelFields.map((x) => [x.name, String(x.values[i])]))
        : (value.labels ?? {}),
      value: Number(value.values[i]),
    }));
  });
}

const EXPLORE_LABEL = 'model_name';

function ExplorePane({ ds, initial }: { ds: SageDatasource; initial: string }) {
  const [query, setQuery] = useState<SageQuery>({
    refId: 'A',
    expr: initial,
    instant: true,
    range: false,
    format: 'table',
  });
  const [result, setResult] = useState<ReturnType<typeof rows>>();
  const [error, setError] = useState('');
  const run = async (q: SageQuery) => {
    setQuery(q);
    setResult(undefined);
    const resp = await lastValueFrom(ds.query(panelRequest([q], CoreApp.Explore)));
    setError(resp.error?.message ?? '');
    setResult(rows(resp.data));
  };
  return (
    <Stack direction="column" gap={1}>
      <div>
        <Button onClick={() => void run(query)}>Run query</Button>
      </div>
      <pre data-testid="explore-expr">{query.expr}</pre>
      <div data-testid="explore-error">{error}</div>
      <table data-testid="explore-table" data-loaded={result ? 'true' : 'false'}>
        <tbody>
          {(result ?? []).map((r, i) => {
            const value = r.labels[EXPLORE_LABEL] ?? '';
            const options = { key: EXPLORE_LABEL, value };
            return (
              <tr
                key={i}
                data-testid="explore-row"
                data-value={value}
                data-active={String(ds.queryHasFilter(query, options))}
              >
                <td data-testid="explore-cell">{value}</td>
                <td>{r.value}</td>
                {(
                  [
                    ['Filter for value', () => ds.toggleQueryFilter(query, { type: 'FILTER_FOR', options })],
                    ['Filter out value', () => ds.toggleQueryFilter(query, { type: 'FILTER_OUT', options })],
                    ['Legend: filter for', () => ds.modifyQuery(query, { type: 'ADD_FILTER', options })],
                    ['Legend: filter out', () => ds.modifyQuery(query, { type: 'ADD_FILTER_OUT', options })],
                  ] as Array<[string, () => SageQuery]>
                ).map(([label, next]) => (
                  <td key={label}>
                    <Button size="sm" onClick={() => void run(next())}>
                      {label}
                    </Button>
                  </td>
                ))}
              </tr>
            );
          })}
        </tbody>
      </table>
    </Stack>
  );
}

/** The panels of the dashboard: one per query type, PromQL with two selectors. */
const PANELS: SageQuery[] = [
  {
    refId: 'promql',
    expr: 'sglang:num_running_reqs + 0 * scalar(sum(sum_over_time(Invocations[5m])))',
    instant: true,
    range: false,
  },
  { refId: 'diagnosis', queryType: 'diagnosis' },
  { refId: 'alarms', queryType: 'alarms' },
  { refId: 'inventory', queryType: 'inventory', format: 'table' },
];

interface PanelResult {
  refId: string;
  executed: string;
  endpoints: string[];
  series: number;
  notices: string[];
}

function panelResults(frames: DataFrame[]): PanelResult[] {
  return PANELS.map(({ refId }) => {
    const mine = frames.filter((f) => f.refId === refId);
    const endpoints = mine.flatMap((f) => f.fields.find((x) => x.name === 'endpoint')?.values ?? []).map(String);
    return {
      refId,
      executed: mine.map((f) => f.meta?.executedQueryString ?? '').find(Boolean) ?? '',
      endpoints: [...new Set(endpoints)].sort(),
      series: refId === 'promql' ? rows(mine).length : mine.length,
      notices: mine.flatMap((f) => (f.meta?.notices ?? []).map((n) => n.text)),
    };
  });
}

function DashboardPane({ ds }: { ds: SageDatasource }) {
  const [keys, setKeys] = useState<MetricFindValue[]>([]);
  const [key, setKey] = useState('');
  const [values, setValues] = useState<MetricFindValue[]>();
  const [filters, setFilters] = useState<AdHocVariableFilter[]>([]);
  const [panels, setPanels] = useState<PanelResult[]>();
  const [lookups, setLookups] = useState('');
  const range = useState(lastHour)[0];
  useEffect(() => {
    void ds.getTagKeys({ filters: [], timeRange: range }).then(setKeys);
  }, [ds, range]);
  const pickKey = async (k: string) => {
    setKey(k);
    setValues(undefined);
    setValues(await ds.getTagValues({ key: k, filters, timeRange: range }));
  };
  // cached: the data source's own lookups. fresh: a new lookup per call, so every panel's
  // lookups reach the plugin. bypass: fresh, and X-Cache-Skip past the plugin's cache too,
  // so only the plugin's discovery rate limit stands between the panels and CloudWatch.
  const open = async (panelCount: number, mode: 'cached' | 'fresh' | 'bypass') => {
    setPanels(undefined);
    setLookups('');
    const skip = {
      getResource: <T,>(path: string, params?: Record<string, unknown>) =>
        ds.getResource<T>(path, params, { headers: { 'X-Cache-Skip': 'true' } }),
    };
    const lookup = () =>
      mode === 'cached' ? ds.tags : new TagLookup(mode === 'bypass' ? new ResourceClient(skip) : ds.resources);
    const started = Date.now();
    // Each panel's filter menu asks for the keys and for the values of every filter's key.
    const settled = await Promise.allSettled(
      Array.from({ length: panelCount }, () => [
        lookup().keys('', filters, range),
        ...filters.map((f) => lookup().values('', f.key, filters, range)),
      ]).flat()
    );
    const failed = settled.filter((r) => r.status === 'rejected').length;
    setLookups(JSON.stringify({ lookups: settled.length, failed, ms: Date.now() - started }));
    const resp = await lastValueFrom(ds.query(panelRequest(PANELS, CoreApp.Dashboard, filters)));
    setPanels(panelResults(resp.data));
  };
  return (
    <Stack direction="column" gap={1}>
      <label>
        Filter key
        <select aria-label="Filter key" value={key} onChange={(e) => void pickKey(e.target.value)}>
          <option value="">choose</option>
          {keys.map((k) => (
            <option key={String(k.value)} value={String(k.value)}>
              {k.text}
            </option>
          ))}
        </select>
      </label>
      <label>
        Filter value
        <select
          aria-label="Filter value"
          data-loaded={values ? 'true' : 'false'}
          onChange={(e) => setFilters([...filters, { key, operator: '=', value: e.target.value }])}
        >
          <option value="">choose</option>
          {(values ?? []).map((v, i) => (
            <option key={i} value={String(v.value)}>
              {v.text}
            </option>
          ))}
        </select>
      </label>
      <pre data-testid="dashboard-filters">{JSON.stringify(filters)}</pre>
      <Stack direction="row" gap={1}>
        <Button onClick={() => void open(20, 'cached')}>Open dashboard</Button>
        <Button variant="secondary" onClick={() => void open(20, 'fresh')}>
          Open dashboard without the lookup cache
        </Button>
        <Button variant="secondary" onClick={() => void open(20, 'bypass')}>
          Open dashboard without any cache
        </Button>
      </Stack>
      <pre data-testid="dashboard-lookups">{lookups}</pre>
      <pre data-testid="dashboard-panels" data-loaded={panels ? 'true' : 'false'}>
        {panels ? JSON.stringify(panels, null, 1) : ''}
      </pre>
    </Stack>
  );
}

export function FiltersPage({ ds }: { ds: SageDatasource }) {
  return (
    <Stack direction="column" gap={3}>
      <ExplorePane ds={ds} initial="sglang:num_running_reqs + 0 * scalar(sum(sum_over_time(Invocations[5m])))" />
      <DashboardPane ds={ds} />
    </Stack>
  );
}
