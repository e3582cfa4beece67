import { createDataFrame, DataFrame, DataFrameType, Field, FieldType, Labels, QueryResultMeta } from '@grafana/data';

import { runsPromQL } from './queryTypes';
import { INSTANT_REFID_SUFFIX, SageQuery } from './types';

// The backend always answers with Prometheus-style multi frames (one per series). Table and
// heatmap formats are browser-side views of those frames, as in Grafana's Prometheus frontend,
// so alerting and other server-side consumers keep seeing the raw series.

interface Series {
  times: number[];
  values: Array<number | null>;
  labels: Labels;
}

function seriesOf(frame: DataFrame): Series | undefined {
  const time = frame.fields.find((f) => f.type === FieldType.time);
  const value = frame.fields.find((f) => f.type === FieldType.number);
  if (!time || !value) {
    return undefined;
  }
  const labels: Labels = { ...(value.labels ?? {}) };
  // The backend renames the value field after __name__; keep the metric as a column.
  if (!labels.__name__ && value.name && value.name !== 'Value') {
    labels.__name__ = value.name;
  }
  return { times: [...time.values], values: [...value.values], labels };
}

/** Name of the value column: "Value", or "Value #<refId>" when several table queries share a panel. */
export function valueColumnName(refId: string, manyTables: boolean): string {
  return manyTables ? `Value #${refId}` : 'Value';
}

/** One table per query: Time, one column per label (sorted), and the value; rows ordered by time. */
export function framesToTable(frames: DataFrame[], refId: string, manyTables: boolean): DataFrame {
  const all = frames.map(seriesOf).filter((s): s is Series => s !== undefined);
  const keys = Array.from(new Set(all.flatMap((s) => Object.keys(s.labels)))).sort();
  const rows = all.flatMap((s) => s.times.map((t, i) => ({ t, v: s.values[i], labels: s.labels })));
  rows.sort((a, b) => a.t - b.t);
  const fields: Array<Partial<Field>> = [
    { name: 'Time', type: FieldType.time, values: rows.map((r) => r.t) },
    ...keys.map((k) => ({ name: k, type: FieldType.string, values: rows.map((r) => r.labels[k] ?? '') })),
    {
      name: valueColumnName(refId, manyTables),
      type: FieldType.number,
      values: rows.map((r) => r.v),
      config: { displayNameFromDS: valueColumnName(refId, manyTables) },
    },
  ];
  return createDataFrame({ refId, fields, meta: { ...inspected(frames), preferredVisualisationType: 'table' } });
}

/**
 * What the query inspector and the panel show of a query (the PromQL as sent, the stats, the
 * notices), from the frames the backend put it on, so a view built from the frames keeps it.
 * Notices repeated on several frames are kept once.
 */
function inspected(frames: DataFrame[]): QueryResultMeta {
  const meta = frames.find((f) => f.meta?.executedQueryString !== undefined || f.meta?.stats)?.meta;
  const out: QueryResultMeta = {};
  if (meta?.executedQueryString !== undefined) {
    out.executedQueryString = meta.executedQueryString;
  }
  if (meta?.stats) {
    out.stats = meta.stats;
  }
  const notices = new Map(frames.flatMap((f) => f.meta?.notices ?? []).map((n) => [`${n.severity} ${n.text}`, n]));
  if (notices.size) {
    out.notices = [...notices.values()];
  }
  return out;
}

function leValue(le: string): number {
  return le === '+Inf' || le === 'Inf' ? Infinity : Number(le);
}

function groupKey(labels: Labels): string {
  return Object.keys(labels)
    .filter((k) => k !== 'le')
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(',');
}

/**
 * Classic `le` bucket series become heatmap rows: buckets sorted by bound and de-accumulated
 * (each row holds its own count, not the cumulative one). One frame per group of series that
 * differ only in `le`. Frames without `le` (native histograms arrive as heatmap-cells already)
 * pass through unchanged.
 */
export function bucketsToHeatmap(frames: DataFrame[], refId: string): DataFrame[] {
  const passthrough: DataFrame[] = [];
  const groups = new Map<string, Series[]>();
  const bucketFrames: DataFrame[] = [];
  for (const frame of frames) {
    const s = seriesOf(frame);
    if (!s || s.labels.le === undefined || Number.isNaN(leValue(s.labels.le))) {
      passthrough.push(frame);
      continue;
    }
    bucketFrames.push(frame);
    const key = groupKey(s.labels);
    groups.set(key, [...(groups.get(key) ?? []), s]);
  }
  // The query inspector reads the PromQL and stats from the frames and lists every frame's stats,
  // so they go on the first heatmap only; each heatmap keeps the notices (the panel shows them
  // once).
  const { notices, ...meta } = inspected(bucketFrames);
  const heatmaps = Array.from(groups.values()).map((buckets, i) => {
    buckets.sort((a, b) => leValue(a.labels.le) - leValue(b.labels.le));
    const times = Array.from(new Set(buckets.flatMap((b) => b.times))).sort((a, b) => a - b);
    const cumulative = buckets.map((b) => {
      const byTime = new Map(b.times.map((t, i) => [t, b.values[i]]));
      return times.map((t) => byTime.get(t) ?? null);
    });
    const fields: Array<Partial<Field>> = [{ name: 'Time', type: FieldType.time, values: times }];
    buckets.forEach((b, k) => {
      const values = cumulative[k].map((c, i) => {
        const prev = k > 0 ? cumulative[k - 1][i] : null;
        return c === null || prev === null ? c : c - prev;
      });
      const { le, __name__, ...rest } = b.labels;
      fields.push({ name: le, type: FieldType.number, values, labels: rest, config: { displayNameFromDS: le } });
    });
    return createDataFrame({
      refId,
      name: buckets[0].labels.__name__,
      fields,
      meta: { ...(i === 0 ? meta : {}), ...(notices ? { notices } : {}), type: DataFrameType.HeatmapRows },
    });
  });
  return [...heatmaps, ...passthrough];
}

function baseRefId(refId: string | undefined): string {
  return refId?.endsWith(INSTANT_REFID_SUFFIX) ? refId.slice(0, -INSTANT_REFID_SUFFIX.length) : (refId ?? '');
}

/**
 * Applies each query's format to its frames. Explore shows instant results as a table, as it
 * does for Prometheus. Frames of unknown refIds and of diagnosis queries pass through.
 */
export function applyFormats(frames: DataFrame[], targets: SageQuery[], explore: boolean): DataFrame[] {
  const byRefId = new Map(targets.map((t) => [t.refId, t]));
  const manyTables = targets.filter((t) => t.format === 'table' && !t.hide).length > 1;
  const order: string[] = [];
  const groups = new Map<string, DataFrame[]>();
  for (const frame of frames) {
    const refId = frame.refId ?? '';
    if (!groups.has(refId)) {
      groups.set(refId, []);
      order.push(refId);
    }
    groups.get(refId)!.push(frame);
  }
  return order.flatMap((refId) => {
    const group = groups.get(refId)!;
    const target = byRefId.get(refId);
    if (!target || !runsPromQL(target)) {
      return group;
    }
    const instantOnly = Boolean(target.instant) && !target.range;
    if (target.format === 'table' || (explore && instantOnly && target.format !== 'heatmap')) {
      const numeric = group.filter((f) => seriesOf(f) && f.meta?.type !== DataFrameType.HeatmapCells);
      if (numeric.length === 0) {
        return group;
      }
      return [framesToTable(numeric, baseRefId(refId), manyTables)];
    }
    if (target.format === 'heatmap') {
      return bucketsToHeatmap(group, refId);
    }
    return group;
  });
}
