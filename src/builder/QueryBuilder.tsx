import { getTemplateSrv } from '@grafana/runtime';
import {
  Button,
  Combobox,
  ComboboxOption,
  IconButton,
  InlineField,
  InlineFieldRow,
  Input,
  MultiCombobox,
  Stack,
  Text,
} from '@grafana/ui';
import React, { useEffect, useMemo, useState } from 'react';

import { Named } from '../components/Named';
import { editorMatchers, ResourcePrometheusClient } from '../promql/client';
import { LabelMatcher, MatchOp } from '../promql/names';
import { DISCOVERY_LIMIT } from '../resources';
import { catalogMetrics, describeMetric, FAMILIES, metricInfo } from './catalog';
import {
  AGG_OPS,
  AggOp,
  aggTakesParam,
  BINARY_OPS,
  BinaryOp,
  BuilderQuery,
  defaultPipeline,
  emptyPipeline,
  HISTOGRAM_FNS,
  HistogramFn,
  Operand,
  Pipeline,
  RangeFn,
  rangeFnsFor,
  takesQuantile,
  Term,
} from './model';
import { isNumber, isWindow, parse } from './parse';
import { render } from './render';

// The query builder. Test ids and labels are stable (the browser tests drive them):
// query-builder, operand-<i> (each operand of the chain, operand-<i>.<j> inside the group at
// operand-<i>; controls inside are labelled
// "Metric", "Filter <n> label|operator|value", "Remove filter <n>", "Add filter",
// "Range function", "Range window", "Aggregation", "Group by" (or "Group without"), "Aggregation parameter",
// "Or metrics", "Histogram function", "Quantile", "Number"), "Operator <i>" and "Remove operation <i>" for the chain,
// "Add operation with query|number|group", builder-preview, metric-kind,
// metric-discovery-note.

export interface QueryBuilderProps {
  expr: string;
  onChange: (expr: string) => void;
  onRunQuery?: () => void;
  client: ResourcePrometheusClient;
}

/** The model an expression opens with in the builder: empty for an empty query. */
export function initialModel(expr: string): BuilderQuery | undefined {
  if (expr.trim() === '') {
    return { first: emptyPipeline(), rest: [] };
  }
  const r = parse(expr);
  return r.ok ? r.query : undefined;
}

export function QueryBuilder({ expr, onChange, onRunQuery, client }: QueryBuilderProps) {
  // The builder keeps rows the query cannot show yet (a filter without a label); the text is
  // re-read only when it changes from outside (React's state-from-props pattern).
  const [state, setState] = useState(() => ({
    expr,
    model: initialModel(expr) ?? { first: emptyPipeline(), rest: [] },
  }));
  if (expr !== state.expr) {
    setState({ expr, model: initialModel(expr) ?? state.model });
  }
  const model = state.model;
  const update = (m: BuilderQuery) => {
    const written = render(m);
    setState({ expr: written, model: m });
    onChange(written);
  };
  const metrics = useMetricOptions(client);

  return (
    <Stack direction="column" gap={1}>
      <div data-testid="query-builder">
        <ChainEditor query={model} onChange={update} client={client} metrics={metrics} onRunQuery={onRunQuery} />
      </div>
      <pre data-testid="builder-preview" aria-label="Query preview">
        {render(model) || 'Pick a metric'}
      </pre>
    </Stack>
  );
}

interface ChainEditorProps {
  query: BuilderQuery;
  onChange: (q: BuilderQuery) => void;
  client: ResourcePrometheusClient;
  metrics: MetricOptions;
  onRunQuery?: () => void;
  /** Test id prefix of nested chains: operand-2.0 is the first operand of the group at operand-2. */
  prefix?: string;
}

function ChainEditor({ query, onChange, client, metrics, onRunQuery, prefix = '' }: ChainEditorProps) {
  const setOperand = (i: number, o: Operand) =>
    onChange(
      i === 0
        ? { ...query, first: o as Term }
        : { ...query, rest: query.rest.map((r, j) => (j === i - 1 ? { ...r, operand: o } : r)) }
    );
  const add = (operand: Operand, op: BinaryOp) => onChange({ ...query, rest: [...query.rest, { op, operand }] });

  const operandEditor = (o: Operand, i: number) => {
    switch (o.type) {
      case 'number':
        return (
          <InlineField
            label="Number"
            labelWidth={14}
            invalid={!isNumber(o.value)}
            error="A number such as 100, or a variable"
          >
            <Input
              aria-label="Number"
              width={16}
              value={o.value}
              onChange={(e) => setOperand(i, { type: 'number', value: e.currentTarget.value })}
              onBlur={onRunQuery}
            />
          </InlineField>
        );
      case 'group':
        return (
          <div style={{ marginLeft: 16 }}>
            <ChainEditor
              query={o.query}
              onChange={(q) => setOperand(i, { type: 'group', query: q })}
              client={client}
              metrics={metrics}
              onRunQuery={onRunQuery}
              prefix={`${prefix}${i}.`}
            />
          </div>
        );
      default:
        return <PipelineEditor pipeline={o} client={client} metrics={metrics} onChange={(p) => setOperand(i, p)} />;
    }
  };

  return (
    <Stack direction="column" gap={1}>
      <div data-testid={`operand-${prefix}0`}>{operandEditor(query.first, 0)}</div>
      {query.rest.map((r, j) => (
        <div key={j} data-testid={`operand-${prefix}${j + 1}`}>
          <InlineFieldRow>
            <InlineField label="Operator" labelWidth={14}>
              <Named name={`Operator ${j + 1}`}>
                {(id) => (
                  <Combobox<BinaryOp>
                    aria-labelledby={id}
                    width={12}
                    options={BINARY_OPS.map((op) => ({ label: op, value: op }))}
                    value={r.op}
                    onChange={(v) =>
                      onChange({ ...query, rest: query.rest.map((x, k) => (k === j ? { ...x, op: v.value } : x)) })
                    }
                  />
                )}
              </Named>
            </InlineField>
            <IconButton
              name="trash-alt"
              aria-label={`Remove operation ${j + 1}`}
              onClick={() => onChange({ ...query, rest: query.rest.filter((_, k) => k !== j) })}
            />
          </InlineFieldRow>
          {operandEditor(r.operand, j + 1)}
        </div>
      ))}
      <Stack direction="row" gap={1}>
        <Button size="sm" variant="secondary" icon="plus" onClick={() => add(emptyPipeline(), '/')}>
          Add operation with query
        </Button>
        <Button size="sm" variant="secondary" icon="plus" onClick={() => add({ type: 'number', value: '100' }, '*')}>
          Add operation with number
        </Button>
        <Button
          size="sm"
          variant="secondary"
          icon="brackets-curly"
          onClick={() =>
            add(
              {
                type: 'group',
                query: { first: { type: 'number', value: '1' }, rest: [{ op: '-', operand: emptyPipeline() }] },
              },
              '*'
            )
          }
        >
          Add operation with group
        </Button>
      </Stack>
    </Stack>
  );
}

/** The metric picker's options, each with its family as group (the catalog's order). */
type MetricOptions = { options: Array<ComboboxOption<string>>; note?: string };

/**
 * Catalog metrics the data source has, grouped by family; discovered names the catalog lacks go
 * under "Other". The whole catalog is offered while discovery is asking (undefined), when it
 * failed (failure says why), found nothing, or stopped at its limit (the list is then partial).
 */
export function groupMetrics(discovered: string[] | undefined, failure?: string): MetricOptions {
  const option = (group: string) => (name: string) => {
    const info = metricInfo(name);
    return { label: name, value: name, group, description: info ? describeMetric(info) : undefined };
  };
  const complete = discovered !== undefined && discovered.length > 0 && discovered.length < DISCOVERY_LIMIT;
  const have = complete ? new Set(discovered) : undefined;
  const options = FAMILIES.flatMap((f) =>
    catalogMetrics()
      .filter((m) => m.family === f.id && (!have || have.has(m.name)))
      .map((m) => option(f.title)(m.name))
  );
  const other = (discovered ?? []).filter((n) => !metricInfo(n)).sort();
  options.push(...other.map(option('Other')));
  let note: string | undefined;
  if (failure !== undefined) {
    note = `Metric discovery failed (${failure}): showing the whole catalog`;
  } else if (discovered && discovered.length === 0) {
    note = 'Metric discovery returned nothing: showing the whole catalog';
  } else if (discovered && !complete) {
    note = `Metric discovery stopped at ${discovered.length} names: showing the whole catalog`;
  }
  return { options, note };
}

function useMetricOptions(client: ResourcePrometheusClient): MetricOptions {
  const [discovered, setDiscovered] = useState<{ names?: string[]; failure?: string }>({});
  useEffect(() => {
    let live = true;
    client.metricNames().then(
      (names) => live && setDiscovered({ names }),
      (e: unknown) => live && setDiscovered({ names: [], failure: e instanceof Error ? e.message : String(e) })
    );
    return () => {
      live = false;
    };
  }, [client]);
  return useMemo(() => groupMetrics(discovered.names, discovered.failure), [discovered]);
}

/**
 * The metrics that may be read like p's own under its aggregation: the range function and
 * the histogram reading must apply to them too (so never a delta metric under rate).
 */
export function alternativeOptions(options: Array<ComboboxOption<string>>, p: Pipeline): Array<ComboboxOption<string>> {
  const histogram = p.quantile !== undefined || p.histogramFn !== undefined;
  const fits = (m: string) =>
    m !== p.metric && (!p.range || rangeFnsFor(m).includes(p.range.fn)) && (!histogram || takesQuantile(m));
  return options.filter((o) => fits(o.value));
}

/** Names of the dashboard's template variables, as $name, for filter values. */
function templateVariables(): string[] {
  try {
    return getTemplateSrv()
      .getVariables()
      .map((v) => `$${v.name}`);
  } catch {
    // Outside Grafana (tests) there is no template service.
    return [];
  }
}

const MATCH_OPS: Array<ComboboxOption<MatchOp>> = (['=', '!=', '=~', '!~'] as MatchOp[]).map((op) => ({
  label: op,
  value: op,
}));

interface PipelineEditorProps {
  pipeline: Pipeline;
  client: ResourcePrometheusClient;
  metrics: MetricOptions;
  onChange: (p: Pipeline) => void;
}

function useAsync<T>(load: () => Promise<T>, deps: unknown[], initial: T): T {
  const [value, setValue] = useState<T>(initial);
  useEffect(() => {
    let live = true;
    load().then(
      (v) => live && setValue(v),
      () => live && setValue(initial)
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  return value;
}

function PipelineEditor({ pipeline: p, client, metrics, onChange }: PipelineEditorProps) {
  const info = p.metric ? metricInfo(p.metric) : undefined;
  const labelNames = useAsync(
    () => (p.metric ? client.labelNames(p.metric) : Promise.resolve([])),
    [client, p.metric],
    [] as string[]
  );
  const labelOptions = useMemo(() => labelNames.map((n) => ({ label: n, value: n })), [labelNames]);
  // The or-metrics are read with the same function, so it must apply to each of them.
  const fns = p.metric
    ? rangeFnsFor(p.metric).filter((f) => (p.alternatives ?? []).every((a) => rangeFnsFor(a).includes(f)))
    : [];
  const setMatcher = (i: number, m: Partial<LabelMatcher>) =>
    onChange({ ...p, matchers: p.matchers.map((x, j) => (j === i ? { ...x, ...m } : x)) });

  return (
    <Stack direction="column" gap={0.5}>
      <InlineFieldRow>
        <InlineField label="Metric" labelWidth={14} grow>
          <Named name="Metric">
            {(id) => (
              <Combobox<string>
                aria-labelledby={id}
                placeholder="Search metrics"
                options={metrics.options}
                value={p.metric || null}
                createCustomValue
                onChange={(v) => onChange(defaultPipeline(v.value, p.matchers))}
              />
            )}
          </Named>
        </InlineField>
        {info && (
          <span data-testid="metric-kind">
            <Text color="secondary">{describeMetric(info)}</Text>
          </span>
        )}
      </InlineFieldRow>
      {metrics.note && (
        <span data-testid="metric-discovery-note">
          <Text color="secondary" italic>
            {metrics.note}
          </Text>
        </span>
      )}
      {p.matchers.map((m, i) => (
        <LabelFilter
          key={i}
          index={i}
          matcher={m}
          // Values are those of series the other complete filters keep.
          others={p.matchers.filter((o, j) => j !== i && o.name !== '' && o.value !== '')}
          metric={p.metric}
          client={client}
          labelOptions={labelOptions}
          onChange={(x) => setMatcher(i, x)}
          onRemove={() => onChange({ ...p, matchers: p.matchers.filter((_, j) => j !== i) })}
        />
      ))}
      <div>
        <Button
          size="sm"
          variant="secondary"
          icon="plus"
          disabled={!p.metric}
          onClick={() => onChange({ ...p, matchers: [...p.matchers, { name: '', op: '=~', value: '' }] })}
        >
          Add filter
        </Button>
      </div>
      {p.metric && (
        <InlineFieldRow>
          <InlineField
            label="Over time"
            labelWidth={14}
            tooltip={
              info?.temporality === 'delta'
                ? 'A delta metric: each sample is one interval, so sum_over_time, never rate'
                : 'rate/increase for counters and histograms, *_over_time for gauges'
            }
          >
            <Named name="Range function">
              {(id) => (
                <Combobox<RangeFn | ''>
                  aria-labelledby={id}
                  width={20}
                  options={[{ label: 'none', value: '' }, ...fns.map((f) => ({ label: f, value: f }))]}
                  value={p.range?.fn ?? ''}
                  onChange={(v) =>
                    onChange({
                      ...p,
                      range: v.value ? { fn: v.value, window: p.range?.window ?? '$__rate_interval' } : undefined,
                    })
                  }
                />
              )}
            </Named>
          </InlineField>
          {p.range && (
            <InlineField
              label="Window"
              labelWidth={10}
              invalid={!isWindow(p.range.window)}
              error="A duration such as 5m or 1h30m, or a variable such as $__rate_interval"
            >
              <Input
                aria-label="Range window"
                width={20}
                value={p.range.window}
                onChange={(e) => onChange({ ...p, range: { ...p.range!, window: e.currentTarget.value } })}
              />
            </InlineField>
          )}
        </InlineFieldRow>
      )}
      {p.metric && (
        <InlineFieldRow>
          <InlineField label="Aggregation" labelWidth={14}>
            <Named name="Aggregation">
              {(id) => (
                <Combobox<AggOp | ''>
                  aria-labelledby={id}
                  width={14}
                  options={[{ label: 'none', value: '' }, ...AGG_OPS.map((op) => ({ label: op, value: op }))]}
                  value={p.agg?.op ?? ''}
                  onChange={(v) => {
                    const op = v.value;
                    onChange({
                      ...p,
                      alternatives: op ? p.alternatives : undefined,
                      agg: op
                        ? {
                            op,
                            by: p.agg?.by ?? [],
                            without: p.agg?.without,
                            param: aggTakesParam(op) ? (p.agg?.param ?? '5') : undefined,
                          }
                        : undefined,
                    });
                  }}
                />
              )}
            </Named>
          </InlineField>
          {p.agg && aggTakesParam(p.agg.op) && (
            <InlineField
              label="Parameter"
              labelWidth={10}
              invalid={!isNumber(p.agg.param ?? '')}
              error="A number such as 5, or a variable"
            >
              <Input
                aria-label="Aggregation parameter"
                width={10}
                value={p.agg.param ?? ''}
                onChange={(e) => onChange({ ...p, agg: { ...p.agg!, param: e.currentTarget.value } })}
              />
            </InlineField>
          )}
          {p.agg && (
            <InlineField
              label="or"
              labelWidth={6}
              tooltip="Further metrics read with the same filters and function under this aggregation, e.g. the SGLang counterpart of a vLLM metric"
            >
              <Named name="Or metrics">
                {(id) => (
                  <MultiCombobox<string>
                    aria-labelledby={id}
                    width={30}
                    options={alternativeOptions(metrics.options, p)}
                    value={p.alternatives ?? []}
                    createCustomValue
                    onChange={(v) => {
                      const alternatives = v.map((x) => x.value);
                      onChange({ ...p, alternatives: alternatives.length ? alternatives : undefined });
                    }}
                  />
                )}
              </Named>
            </InlineField>
          )}
          {p.agg && (
            <InlineField label={p.agg.without ? 'without' : 'by'} labelWidth={8} grow>
              <Named name={p.agg.without ? 'Group without' : 'Group by'}>
                {(id) => (
                  <MultiCombobox<string>
                    aria-labelledby={id}
                    options={labelOptions}
                    value={p.agg!.by}
                    createCustomValue
                    onChange={(v) => onChange({ ...p, agg: { ...p.agg!, by: v.map((x) => x.value) } })}
                  />
                )}
              </Named>
            </InlineField>
          )}
        </InlineFieldRow>
      )}
      {p.metric && takesQuantile(p.metric) && (
        <InlineFieldRow>
          <InlineField
            label="Histogram"
            labelWidth={14}
            tooltip="Reads the native histogram: a quantile, or its average, count or sum (histogram_avg suits vended latencies without buckets)"
          >
            <Named name="Histogram function">
              {(id) => (
                <Combobox<string>
                  aria-labelledby={id}
                  width={22}
                  options={['', 'histogram_quantile', ...HISTOGRAM_FNS].map((f) => ({ label: f || 'none', value: f }))}
                  value={p.quantile !== undefined ? 'histogram_quantile' : (p.histogramFn ?? '')}
                  onChange={(v) =>
                    onChange({
                      ...p,
                      quantile: v.value === 'histogram_quantile' ? (p.quantile ?? '0.99') : undefined,
                      histogramFn: HISTOGRAM_FNS.includes(v.value as HistogramFn)
                        ? (v.value as HistogramFn)
                        : undefined,
                    })
                  }
                />
              )}
            </Named>
          </InlineField>
          {p.quantile !== undefined && (
            <InlineField
              label="Quantile"
              labelWidth={10}
              tooltip="0.99, or a variable such as $percentile"
              invalid={!isNumber(p.quantile)}
              error="A number such as 0.99, or a variable such as $percentile"
            >
              <Input
                aria-label="Quantile"
                width={16}
                value={p.quantile}
                onChange={(e) => onChange({ ...p, quantile: e.currentTarget.value })}
              />
            </InlineField>
          )}
        </InlineFieldRow>
      )}
    </Stack>
  );
}

interface LabelFilterProps {
  index: number;
  matcher: LabelMatcher;
  others: LabelMatcher[];
  metric: string;
  client: ResourcePrometheusClient;
  labelOptions: Array<ComboboxOption<string>>;
  onChange: (m: Partial<LabelMatcher>) => void;
  onRemove: () => void;
}

function LabelFilter({
  index,
  matcher: m,
  others,
  metric,
  client,
  labelOptions,
  onChange,
  onRemove,
}: LabelFilterProps) {
  const n = index + 1;
  const key = JSON.stringify(others);
  const values = useAsync(
    () => (m.name ? client.labelValues(m.name, metric, editorMatchers(others)) : Promise.resolve([])),
    [client, m.name, metric, key],
    [] as string[]
  );
  const valueOptions = useMemo(
    () => [...templateVariables(), ...values].map((v) => ({ label: v, value: v })),
    [values]
  );
  return (
    <div data-testid={`label-filter-${index}`}>
      <InlineFieldRow>
        <InlineField label={`Filter ${n}`} labelWidth={14}>
          <Named name={`Filter ${n} label`}>
            {(id) => (
              <Combobox<string>
                aria-labelledby={id}
                width={36}
                placeholder="label"
                options={labelOptions}
                value={m.name || null}
                createCustomValue
                onChange={(v) => onChange({ name: v.value })}
              />
            )}
          </Named>
        </InlineField>
        <Named name={`Filter ${n} operator`}>
          {(id) => (
            <Combobox<MatchOp>
              aria-labelledby={id}
              width={8}
              options={MATCH_OPS}
              value={m.op}
              onChange={(v) => onChange({ op: v.value })}
            />
          )}
        </Named>
        <Named name={`Filter ${n} value`}>
          {(id) => (
            <Combobox<string>
              aria-labelledby={id}
              width={30}
              placeholder="value"
              options={valueOptions}
              value={m.value !== '' ? m.value : null}
              createCustomValue
              onChange={(v) => onChange({ value: v.value })}
            />
          )}
        </Named>
        <IconButton name="times" aria-label={`Remove filter ${n}`} onClick={onRemove} />
      </InlineFieldRow>
    </div>
  );
}
