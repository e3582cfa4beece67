import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { Alert, Button, Checkbox, Input, Stack, Text, useStyles2 } from '@grafana/ui';
import React, { useEffect, useMemo, useState } from 'react';

import { catalogMetrics, describeMetric, FAMILIES, metricInfo } from '../builder/catalog';
import { ResourcePrometheusClient } from '../promql/client';
import { LabelMatcher, regexEscape, selector } from '../promql/names';
import { DISCOVERY_LIMIT } from '../resources';

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

/** The names containing the search (any case). */
export function matching(names: readonly string[], search: string): string[] {
  const q = search.trim().toLowerCase();
  return q === '' ? [...names] : names.filter((n) => n.toLowerCase().includes(q));
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

interface SearchableListProps {
  names: string[];
  /** What the names are ("values"): the search box is "Search <noun>". */
  noun: string;
  testId: string;
  row: (name: string) => React.ReactNode;
}

/** A search box, then the first ROW_LIMIT names containing it and a note on how many match. */
function SearchableList({ names, noun, testId, row }: SearchableListProps) {
  const styles = useStyles2(getStyles);
  const [search, setSearch] = useState('');
  const items = matching(names, search);
  const shown = items.slice(0, ROW_LIMIT);
  let note = `${names.length.toLocaleString('en-US')} ${noun}`;
  if (items.length < names.length) {
    note = `${items.length.toLocaleString('en-US')} of ${note} match`;
  }
  if (shown.length < items.length) {
    note += `; showing the first ${ROW_LIMIT}, search to narrow`;
  }
  return (
    <>
      <Input
        aria-label={`Search ${noun}`}
        placeholder={`Search ${noun}`}
        value={search}
        onChange={(e) => setSearch(e.currentTarget.value)}
      />
      <span data-testid="browser-list-note">
        <Text color="secondary" variant="bodySmall">
          {note}
        </Text>
      </span>
      <ul className={styles.list} data-testid={testId}>
        {shown.map((item) => (
          <li key={item}>{row(item)}</li>
        ))}
      </ul>
    </>
  );
}

interface PickRowProps {
  name: string;
  about: string;
  picked: boolean;
  onPick: () => void;
}

/** A name to pick, with a line about it. */
function PickRow({ name, about, picked, onPick }: PickRowProps) {
  const styles = useStyles2(getStyles);
  return (
    <button type="button" className={picked ? styles.picked : styles.row} aria-pressed={picked} onClick={onPick}>
      <span className={styles.name}>{name}</span>
      <span className={styles.about}>{about}</span>
    </button>
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
  };
  const toggle = (value: string) => {
    const next = new Map(picked);
    const now = next.get(label!) ?? [];
    next.set(label!, now.includes(value) ? now.filter((v) => v !== value) : [...now, value]);
    setPicked(next);
  };

  return (
    <div className={styles.browser} data-testid="metrics-browser">
      <Stack direction="row" gap={2} alignItems="flex-start">
        <div className={styles.column}>
          <Text weight="medium">1. Metric</Text>
          {metrics?.state === 'failed' && (
            <Failed error={`Metric discovery failed (${metrics.error}); the catalog is offered`} />
          )}
          <SearchableList
            names={names}
            noun="metrics"
            testId="browser-metric-list"
            row={(n) => <PickRow name={n} about={aboutMetric(n)} picked={n === metric} onPick={() => pickMetric(n)} />}
          />
        </div>
        <div className={styles.column}>
          <Text weight="medium">2. Label</Text>
          {!metric && <Text color="secondary">Pick a metric to see its labels.</Text>}
          {metric && series?.state === 'loading' && <Text color="secondary">Loading labels…</Text>}
          {series?.state === 'failed' && <Failed error={series.error} />}
          {metric && series?.state === 'done' && (
            <>
              {series.value.length >= DISCOVERY_LIMIT && (
                <span data-testid="browser-series-capped">
                  <Text color="warning" variant="bodySmall">
                    Counted from the first {DISCOVERY_LIMIT.toLocaleString('en-US')} series: labels may have more
                    values.
                  </Text>
                </span>
              )}
              <SearchableList
                key={metric}
                names={labels}
                noun="labels"
                testId="browser-label-list"
                row={(l) => (
                  <PickRow
                    name={l}
                    about={`${counts.get(l)} ${counts.get(l) === 1 ? 'value' : 'values'}`}
                    picked={l === label}
                    onPick={() => setLabel(l)}
                  />
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
              <SearchableList
                key={valuesKey}
                names={values.value}
                noun="values"
                testId="browser-value-list"
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
