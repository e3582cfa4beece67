import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { Alert, Button, Checkbox, Input, Stack, Text, useStyles2 } from '@grafana/ui';
import React, { useEffect, useMemo, useState } from 'react';

import { catalogMetrics, describeMetric, FAMILIES, metricInfo } from '../builder/catalog';
import { ResourcePrometheusClient } from '../promql/client';
import { LabelMatcher, regexEscape, selector } from '../promql/names';

// The metrics browser of the code editor: pick a metric (type, temporality and unit from the
// shared catalog), see its labels with how many values each has, tick values, and use the
// selector. Every list renders at most ROW_LIMIT rows; a search narrows the rest, so a label
// with thousands of values (instances) costs no more than one with a hundred.
// Test ids: metrics-browser, browser-metric-list, browser-label-list, browser-value-list,
// browser-list-note, browser-selector. Inputs are labelled "Search metrics", "Search labels",
// "Search values".

/** Most rows a list of the browser renders. */
export const ROW_LIMIT = 100;

export interface MetricsBrowserProps {
  client: ResourcePrometheusClient;
  /** Called with the selector built, when the user uses it. */
  onUse: (expr: string) => void;
}

type Loaded<T> = { state: 'loading' } | { state: 'done'; value: T } | { state: 'failed'; error: string };

/** Follows a promise into state; a newer key drops an older answer. */
function useLoaded<T>(key: string | undefined, load: () => Promise<T>): Loaded<T> | undefined {
  const [out, setOut] = useState<{ key: string; value: Loaded<T> } | undefined>();
  useEffect(() => {
    if (key === undefined) {
      return undefined;
    }
    let live = true;
    load().then(
      (value) => live && setOut({ key, value: { state: 'done', value } }),
      (e: unknown) =>
        live && setOut({ key, value: { state: 'failed', error: e instanceof Error ? e.message : String(e) } })
    );
    return () => {
      live = false;
    };
    // load is a new closure each render; the key says what it loads.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);
  if (key === undefined) {
    return undefined;
  }
  return out && out.key === key ? out.value : { state: 'loading' };
}

/** Items whose text contains the search (any case). */
export function matching<T>(items: readonly T[], search: string, text: (t: T) => string): T[] {
  const s = search.trim().toLowerCase();
  return s === '' ? [...items] : items.filter((t) => text(t).toLowerCase().includes(s));
}

/** Label name → distinct values, from the label sets of a metric's series. */
export function valueCounts(series: Array<Map<string, string>>): Map<string, number> {
  const values = new Map<string, Set<string>>();
  for (const s of series) {
    for (const [name, value] of s) {
      if (name !== '__name__') {
        values.set(name, (values.get(name) ?? new Set()).add(value));
      }
    }
  }
  const names = [...values.keys()].sort();
  return new Map(names.map((name) => [name, values.get(name)!.size]));
}

/** The matchers for the ticked values: one value is =, several an anchored =~ alternation. */
export function matchersOf(picked: Map<string, string[]>): LabelMatcher[] {
  const out: LabelMatcher[] = [];
  for (const [name, values] of picked) {
    if (values.length === 1) {
      out.push({ name, op: '=', value: values[0] });
    } else if (values.length > 1) {
      out.push({ name, op: '=~', value: values.map(regexEscape).join('|') });
    }
  }
  return out;
}

const familyTitle = new Map(FAMILIES.map((f) => [f.id, f.title]));

/** One line about a metric: family and kind from the catalog. */
function aboutMetric(name: string): string {
  const info = metricInfo(name);
  return info ? `${familyTitle.get(info.family) ?? info.family} · ${describeMetric(info)}` : 'not in the catalog';
}

interface CappedProps<T> {
  items: T[];
  total: number;
  noun: string;
  testId: string;
  row: (item: T) => React.ReactNode;
  keyOf: (item: T) => string;
}

/** The first ROW_LIMIT items, and a note saying how many the search hides. */
function CappedList<T>({ items, total, noun, testId, row, keyOf }: CappedProps<T>) {
  const styles = useStyles2(getStyles);
  const shown = items.slice(0, ROW_LIMIT);
  let note = `${total.toLocaleString('en-US')} ${noun}`;
  if (items.length < total) {
    note = `${items.length.toLocaleString('en-US')} of ${note} match`;
  }
  if (shown.length < items.length) {
    note += `; showing the first ${ROW_LIMIT}, search to narrow`;
  }
  return (
    <>
      <span data-testid="browser-list-note">
        <Text color="secondary" variant="bodySmall">
          {note}
        </Text>
      </span>
      <ul className={styles.list} data-testid={testId}>
        {shown.map((item) => (
          <li key={keyOf(item)}>{row(item)}</li>
        ))}
      </ul>
    </>
  );
}

function Failed({ error }: { error: string }) {
  return <Alert severity="error" title={error} />;
}

export function MetricsBrowser({ client, onUse }: MetricsBrowserProps) {
  const styles = useStyles2(getStyles);
  const [metric, setMetric] = useState<string | undefined>();
  const [label, setLabel] = useState<string | undefined>();
  const [picked, setPicked] = useState<Map<string, string[]>>(new Map());
  const [search, setSearch] = useState({ metrics: '', labels: '', values: '' });

  const metrics = useLoaded('metrics', () => client.metricNames());
  const series = useLoaded(metric, () => client.series(metric!));
  const valuesKey = metric && label ? JSON.stringify([metric, label]) : undefined;
  const values = useLoaded(valuesKey, () => client.labelValues(label!, metric));

  // Discovery that fails or finds nothing leaves the catalog to pick from, as in the builder.
  const names = useMemo(() => {
    const found = metrics?.state === 'done' ? metrics.value : [];
    return found.length > 0 ? [...found].sort() : catalogMetrics().map((m) => m.name);
  }, [metrics]);
  const counts = useMemo(
    () => (series?.state === 'done' ? valueCounts(series.value) : new Map<string, number>()),
    [series]
  );
  const labels = [...counts.keys()];
  const expr = metric ? selector(metric, matchersOf(picked), ', ') : '';

  const pickMetric = (m: string) => {
    setMetric(m);
    setLabel(undefined);
    setPicked(new Map());
    setSearch((s) => ({ ...s, labels: '', values: '' }));
  };
  const toggle = (value: string) => {
    const next = new Map(picked);
    const now = next.get(label!) ?? [];
    next.set(label!, now.includes(value) ? now.filter((v) => v !== value) : [...now, value]);
    setPicked(next);
  };
  const searchInput = (key: keyof typeof search, aria: string) => (
    <Input
      aria-label={aria}
      placeholder={aria}
      value={search[key]}
      onChange={(e) => {
        const v = e.currentTarget.value;
        setSearch((s) => ({ ...s, [key]: v }));
      }}
    />
  );

  return (
    <div className={styles.browser} data-testid="metrics-browser">
      <Stack direction="row" gap={2} alignItems="flex-start">
        <div className={styles.column}>
          <Text weight="medium">1. Metric</Text>
          {searchInput('metrics', 'Search metrics')}
          {metrics?.state === 'failed' && (
            <Failed error={`Metric discovery failed (${metrics.error}); the catalog is offered`} />
          )}
          <CappedList
            items={matching(names, search.metrics, (n) => n)}
            total={names.length}
            noun="metrics"
            testId="browser-metric-list"
            keyOf={(n) => n}
            row={(n) => (
              <button
                type="button"
                className={n === metric ? styles.picked : styles.row}
                aria-pressed={n === metric}
                onClick={() => pickMetric(n)}
              >
                <span className={styles.name}>{n}</span>
                <span className={styles.about}>{aboutMetric(n)}</span>
              </button>
            )}
          />
        </div>
        <div className={styles.column}>
          <Text weight="medium">2. Label</Text>
          {!metric && <Text color="secondary">Pick a metric to see its labels.</Text>}
          {metric && series?.state === 'loading' && <Text color="secondary">Loading labels…</Text>}
          {series?.state === 'failed' && <Failed error={series.error} />}
          {metric && series?.state === 'done' && (
            <>
              {searchInput('labels', 'Search labels')}
              <CappedList
                items={matching(labels, search.labels, (l) => l)}
                total={labels.length}
                noun="labels"
                testId="browser-label-list"
                keyOf={(l) => l}
                row={(l) => (
                  <button
                    type="button"
                    className={l === label ? styles.picked : styles.row}
                    aria-pressed={l === label}
                    onClick={() => {
                      setLabel(l);
                      setSearch((s) => ({ ...s, values: '' }));
                    }}
                  >
                    <span className={styles.name}>{l}</span>
                    <span className={styles.about}>
                      {counts.get(l)} {counts.get(l) === 1 ? 'value' : 'values'}
                    </span>
                  </button>
                )}
              />
            </>
          )}
        </div>
        <div className={styles.column}>
          <Text weight="medium">3. Values</Text>
          {!label && <Text color="secondary">Pick a label to see its values.</Text>}
          {label && values?.state === 'loading' && <Text color="secondary">Loading values…</Text>}
          {values?.state === 'failed' && <Failed error={values.error} />}
          {label && values?.state === 'done' && (
            <>
              {searchInput('values', 'Search values')}
              <CappedList
                items={matching(values.value, search.values, (v) => v)}
                total={values.value.length}
                noun="values"
                testId="browser-value-list"
                keyOf={(v) => v}
                row={(v) => (
                  <Checkbox label={v} value={picked.get(label)?.includes(v) ?? false} onChange={() => toggle(v)} />
                )}
              />
            </>
          )}
        </div>
      </Stack>
      <Stack direction="row" gap={1} alignItems="center">
        <code className={styles.selector} data-testid="browser-selector">
          {expr}
        </code>
        <Button size="sm" disabled={!metric} onClick={() => onUse(expr)}>
          Use query
        </Button>
      </Stack>
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => {
  const row = css({
    display: 'flex',
    flexDirection: 'column',
    width: '100%',
    textAlign: 'left',
    background: 'none',
    border: 'none',
    padding: theme.spacing(0.25, 0.5),
    color: theme.colors.text.primary,
    cursor: 'pointer',
    '&:hover': { background: theme.colors.action.hover },
  });
  return {
    browser: css({
      display: 'flex',
      flexDirection: 'column',
      gap: theme.spacing(1),
      padding: theme.spacing(1),
      border: `1px solid ${theme.colors.border.weak}`,
      borderRadius: theme.shape.radius.default,
    }),
    column: css({ flex: 1, minWidth: 0, display: 'flex', flexDirection: 'column', gap: theme.spacing(0.5) }),
    list: css({ listStyle: 'none', margin: 0, padding: 0, maxHeight: 320, overflowY: 'auto' }),
    row,
    picked: css(row, { background: theme.colors.action.selected }),
    name: css({ fontFamily: theme.typography.fontFamilyMonospace, wordBreak: 'break-all' }),
    about: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
    selector: css({ flex: 1, wordBreak: 'break-all' }),
  };
};
