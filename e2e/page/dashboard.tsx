// ?dashboard=performance|capacity|reliability: one of the bundled dashboards (src/dashboards),
// its variables resolved through the plugin's own variable queries, every panel's targets run
// through the plugin via /api/ds/query, the frames put through Grafana's transformations and
// field config (@grafana/data), and each panel drawn with @grafana/ui's visualisations on the
// dashboard's grid. No Grafana server runs here, so this is the part of Grafana's dashboard
// that the plugin's answers pass through, not all of it: no tooltips, menus or links.
import {
  AdHocVariableFilter,
  applyFieldOverrides,
  CoreApp,
  DataFrame,
  DataQueryRequest,
  DataSourceInstanceSettings,
  FieldColorModeId,
  FieldConfigOptionsRegistry,
  FieldConfigProperty,
  FieldConfigPropertyItem,
  FieldConfigSource,
  FieldType,
  getFieldDisplayName,
  getFieldDisplayValues,
  getFieldDisplayValuesProxy,
  GrafanaTheme2,
  InterpolateFunction,
  MetricFindValue,
  rangeUtil,
  ReducerID,
  ScopedVars,
  standardTransformers,
  standardTransformersRegistry,
  TimeRange,
  transformDataFrame,
  VizOrientation,
} from '@grafana/data';
import { setTemplateSrv, TemplateSrv } from '@grafana/runtime';
import {
  BarGauge,
  BarGaugeDisplayMode,
  BigValue,
  BigValueColorMode,
  BigValueGraphMode,
  BigValueJustifyMode,
  BigValueTextMode,
  PanelChrome,
  Table,
  TimeSeries,
  useTheme2,
  VizRepeater,
} from '@grafana/ui';
import React, { useEffect, useState } from 'react';
import { lastValueFrom } from 'rxjs';

import capacity from '../../src/dashboards/capacity.json';
import performance from '../../src/dashboards/performance.json';
import reliability from '../../src/dashboards/reliability.json';
import { SageDatasource } from '../../src/datasource';
import { SageOptions, SageQuery } from '../../src/types';

/** The dashboards' JSON, as far as this page reads it. */
interface PanelModel {
  id: number;
  type: string;
  title: string;
  description?: string;
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: Array<SageQuery & { datasource?: unknown }>;
  transformations?: Array<{ id: string; options: unknown }>;
  fieldConfig?: FieldConfigSource;
  options?: Record<string, any>;
  maxDataPoints?: number;
  interval?: string;
}

interface VariableModel {
  name: string;
  type: string;
  query?: unknown;
  regex?: string;
  includeAll?: boolean;
  multi?: boolean;
  allValue?: string | null;
  current?: { text?: string | string[]; value?: string | string[] } | null;
  /** An ad-hoc (Filters) variable's filters. */
  filters?: AdHocVariableFilter[];
}

interface DashboardModel {
  uid: string;
  title: string;
  time: { from: string; to: string };
  panels: PanelModel[];
  templating: { list: VariableModel[] };
}

export const DASHBOARDS: Record<string, DashboardModel> = {
  performance: performance as unknown as DashboardModel,
  capacity: capacity as unknown as DashboardModel,
  reliability: reliability as unknown as DashboardModel,
};

const ALL = '$__all';

/** A resolved variable: its options (value → text) and its current value (an ad-hoc one's: its filters). */
interface Resolved {
  model: VariableModel;
  options: Array<{ text: string; value: string }>;
  value: string | string[];
  text: string;
  filters?: AdHocVariableFilter[];
}

type Formatter = (value: string | string[], variable?: VariableModel, fallback?: unknown) => string;

/**
 * Grafana's template service as a dashboard has it: $name, ${name}, ${name:format} and [[name]]
 * replaced by the variables' current values; All becomes the variable's allValue (left
 * unformatted, as Grafana leaves a custom all value) or every option's value; names it does not
 * know (the backend's $__interval, $__range...) stay as they are.
 */
export class DashboardTemplateSrv implements TemplateSrv {
  readonly vars = new Map<string, Resolved>();

  getVariables() {
    return [...this.vars.values()].map((v) => ({
      ...v.model,
      current: { value: v.value, text: v.text },
      ...(v.filters && { filters: v.filters }),
    })) as never;
  }

  containsTemplate(text?: string) {
    return Boolean(text && /\$\w+|\$\{\w+|\[\[\w+/.test(text));
  }

  updateTimeRange() {}

  /** The Filters variables' filters, which Grafana hands the data source in the request. */
  adHocFilters(): AdHocVariableFilter[] {
    return [...this.vars.values()].flatMap((v) => v.filters ?? []);
  }

  replace(text?: string, scopedVars?: ScopedVars, format?: string | Formatter): string {
    if (!text) {
      return text ?? '';
    }
    const re = /\$(\w+)|\$\{(\w+)(?:\.([^:}]+))?(?::([^}]+))?\}|\[\[(\w+)(?::(\w+))?\]\]/g;
    return text.replace(re, (match, bare, braced, fieldPath, bracedFmt, old, oldFmt) => {
      const name: string = bare ?? braced ?? old;
      const fmt: string | Formatter | undefined = bracedFmt ?? oldFmt ?? format;
      const context = scopedVars?.__dataContext?.value;
      if (name === '__data' && context?.frame) {
        // ${__data.fields.x}: field x of the row being drawn, formatted (Grafana's data macro).
        const row = {
          name: context.frame.name,
          refId: context.frame.refId,
          fields: getFieldDisplayValuesProxy({ frame: context.frame, rowIndex: context.rowIndex ?? 0 }),
        };
        const value = String((fieldPath ?? '').split('.').reduce((o: any, k: string) => o?.[k], row) ?? '');
        return this.format(value, undefined, fmt, name, value);
      }
      const scoped = scopedVars?.[name];
      if (scoped) {
        // ${__data.fields.x}, ${__field.name}: a path into the scoped value, as lodash's get reads it.
        const value = fieldPath
          ? String(fieldPath.split('.').reduce((o: any, k: string) => o?.[k], scoped.value) ?? '')
          : String(scoped.value);
        return this.format(value, undefined, fmt, name, fieldPath ? value : String(scoped.text ?? scoped.value));
      }
      const v = this.vars.get(name);
      if (!v) {
        return match;
      }
      let value = v.value;
      const isAll = value === ALL || (Array.isArray(value) && value.includes(ALL));
      if (isAll) {
        if (v.model.allValue && fmt !== 'text' && fmt !== 'queryparam') {
          return v.model.allValue;
        }
        value = v.options.map((o) => o.value);
      }
      return this.format(value, v.model, fmt, name, isAll ? 'All' : v.text);
    });
  }

  private format(
    value: string | string[],
    variable: VariableModel | undefined,
    fmt: string | Formatter | undefined,
    name: string,
    text: string
  ): string {
    const values = Array.isArray(value) ? value : [value];
    if (typeof fmt === 'function') {
      return fmt(value, variable, undefined);
    }
    switch (fmt) {
      case 'text':
        return text;
      case 'queryparam':
        return values.map((x) => `var-${name}=${encodeURIComponent(x)}`).join('&');
      case 'csv':
        return values.join(',');
      case 'pipe':
        return values.join('|');
      case 'raw':
      case undefined:
        // Grafana's default for several values is glob ({a,b}).
        return values.length === 1 ? values[0] : `{${values.join(',')}}`;
      default:
        throw new Error(`variable format ${fmt} is not served by the test page`);
    }
  }
}

/** "text : value" pairs separated by commas, as a custom variable stores them. */
function customOptions(query: string) {
  return query.split(/(?<!\\),/).map((part) => {
    const [text, value] = part.split(' : ').map((s) => s.trim());
    return { text, value: value ?? text };
  });
}

/** The variable's regex applied to what the query found, as Grafana applies it (group 1, else the match). */
function applyRegex(values: MetricFindValue[], regex?: string) {
  const seen = new Set<string>();
  const out: Array<{ text: string; value: string }> = [];
  const parsed = regex ? regex.match(/^\/(.*)\/([gimsuy]*)$/) : null;
  const re = parsed ? new RegExp(parsed[1], parsed[2]) : regex ? new RegExp(regex) : undefined;
  for (const v of values) {
    const text = String(v.text);
    let value = v.value === undefined ? text : String(v.value);
    if (re) {
      const m = text.match(re);
      if (!m) {
        continue;
      }
      value = m[1] ?? m[0];
    }
    if (!seen.has(value)) {
      seen.add(value);
      out.push({ text: re ? value : text, value });
    }
  }
  return out;
}

/** Resolves the dashboard's variables in order (later ones refer to earlier ones), as Grafana does on load. */
async function resolveVariables(
  d: DashboardModel,
  ds: SageDatasource,
  srv: DashboardTemplateSrv,
  range: TimeRange,
  picked?: AdHocVariableFilter[]
) {
  for (const model of d.templating.list) {
    if (model.type === 'adhoc') {
      // No options: the filters a user picked (?filters=), else as the dashboard stores them (none by default).
      const filters = picked ?? model.filters ?? [];
      const text = filters.map((f) => `${f.key} ${f.operator} ${f.value}`).join(', ') || 'none';
      srv.vars.set(model.name, { model, options: [], value: '', text, filters });
      continue;
    }
    let options: Array<{ text: string; value: string }>;
    switch (model.type) {
      case 'datasource':
        options = [{ text: ds.name, value: ds.uid }];
        break;
      case 'custom':
        options = customOptions(String(model.query ?? ''));
        break;
      case 'textbox':
        options = [
          {
            text: String(model.current?.value ?? model.query ?? ''),
            value: String(model.current?.value ?? model.query ?? ''),
          },
        ];
        break;
      case 'query':
        options = applyRegex(await ds.metricFindQuery(model.query as string, { range }), model.regex);
        break;
      default:
        throw new Error(`variable ${model.name}: type ${model.type} is not served by the test page`);
    }
    const wanted = model.current?.value;
    let value: string | string[];
    let text: string;
    if (
      model.includeAll &&
      (wanted === ALL || (Array.isArray(wanted) && wanted.includes(ALL)) || wanted === undefined)
    ) {
      value = ALL;
      text = 'All';
    } else {
      const found = options.find((o) => o.value === wanted) ?? options[0];
      value = found?.value ?? '';
      text = found?.text ?? '';
    }
    srv.vars.set(model.name, { model, options, value, text });
  }
}

/**
 * The timeseries panel's field defaults (Grafana's graph field config), which the panel's
 * options registry fills in before a field reaches @grafana/ui's TimeSeries.
 */
const GRAPH_DEFAULTS = {
  drawStyle: 'line',
  lineInterpolation: 'linear',
  lineWidth: 1,
  fillOpacity: 0,
  gradientMode: 'none',
  barAlignment: 0,
  barWidthFactor: 0.6,
  showPoints: 'auto',
  pointSize: 5,
  axisPlacement: 'auto',
  axisBorderShow: false,
  axisCenteredZero: false,
  axisColorMode: 'text',
  spanNulls: false,
  insertNulls: false,
  stacking: { mode: 'none', group: 'A' },
  scaleDistribution: { type: 'linear' },
  thresholdsStyle: { mode: 'off' },
  hideFrom: { legend: false, tooltip: false, viz: false },
};

/**
 * A field-config registry holding every property the panel's field config sets, standard or
 * custom: applyFieldOverrides applies only properties its registry knows. Thresholds get
 * Grafana's processing (a null base step stored in JSON is -Infinity).
 */
function registryFor(fc: FieldConfigSource, custom: Record<string, unknown>): FieldConfigOptionsRegistry {
  const ids = new Set<string>(Object.values(FieldConfigProperty));
  for (const k of Object.keys(custom)) {
    ids.add(`custom.${k}`);
  }
  for (const k of Object.keys(fc.defaults.custom ?? {})) {
    ids.add(`custom.${k}`);
  }
  for (const o of fc.overrides ?? []) {
    for (const p of o.properties) {
      ids.add(p.id);
    }
  }
  const reg = new FieldConfigOptionsRegistry();
  for (const id of ids) {
    const isCustom = id.startsWith('custom.');
    const item: FieldConfigPropertyItem = {
      id,
      name: id,
      path: isCustom ? id.slice('custom.'.length) : id,
      isCustom,
      process: id === 'thresholds' ? processThresholds : (v: unknown) => v,
      shouldApply: () => true,
      override: () => null,
      editor: () => null,
      settings: {},
    };
    reg.register(item);
  }
  return reg;
}

function processThresholds(v: any) {
  if (!v?.steps) {
    return v;
  }
  const steps = v.steps
    .map((s: { value: number | null; color: string }) => ({ ...s, value: s.value === null ? -Infinity : s.value }))
    .sort((a: { value: number }, b: { value: number }) => a.value - b.value);
  return { ...v, steps };
}

/** Field config of a panel with the panel type's defaults under it. */
function panelFieldConfig(p: PanelModel): { fc: FieldConfigSource; custom: Record<string, unknown> } {
  const fc = p.fieldConfig ?? { defaults: {}, overrides: [] };
  const graph = p.type === 'timeseries';
  const custom = graph ? { ...GRAPH_DEFAULTS, ...(fc.defaults.custom ?? {}) } : { ...(fc.defaults.custom ?? {}) };
  const defaults = {
    ...fc.defaults,
    custom,
    color: fc.defaults.color ?? {
      mode: graph || p.type === 'barchart' ? FieldColorModeId.PaletteClassic : FieldColorModeId.Thresholds,
    },
  };
  return { fc: { defaults, overrides: fc.overrides ?? [] }, custom };
}

// Transformations as Grafana 13's registry holds them, each loaded on demand (the editors are
// not needed here). Some transformers appear under two keys of standardTransformers: each id
// is registered once.
standardTransformersRegistry.setInit(() => {
  const byId = new Map(Object.values(standardTransformers).map((t) => [t.id, t]));
  const taken = new Set(byId.keys());
  return [...byId.values()].map((t) => {
    const aliasIds = (t.aliasIds ?? []).filter((a) => !taken.has(a));
    aliasIds.forEach((a) => taken.add(a));
    return {
      id: t.id,
      aliasIds,
      name: t.name,
      description: t.description,
      transformation: () => Promise.resolve(t),
      editor: () => null,
      imageDark: '',
      imageLight: '',
    };
  });
});

interface PanelResult {
  frames: DataFrame[];
  error?: string;
  replaceVariables: InterpolateFunction;
}

async function runPanel(
  p: PanelModel,
  d: DashboardModel,
  ds: SageDatasource,
  srv: DashboardTemplateSrv,
  range: TimeRange,
  width: number,
  theme: GrafanaTheme2
): Promise<PanelResult> {
  // The targets name the data source through ${datasource}, which resolves to this one; the
  // query goes to it directly (Grafana's DataSourceSrv is not on this page).
  const targets = (p.targets ?? []).map(({ datasource: _ds, ...t }) => t as SageQuery).filter((t) => ds.filterQuery(t));
  const maxDataPoints = p.maxDataPoints ?? Math.round(width);
  const { interval, intervalMs } = rangeUtil.calculateInterval(range, maxDataPoints, p.interval ?? ds.interval);
  const scopedVars: ScopedVars = {
    __interval: { text: interval, value: interval },
    __interval_ms: { text: String(intervalMs), value: intervalMs },
  };
  const request: DataQueryRequest<SageQuery> = {
    app: CoreApp.Dashboard,
    requestId: `${d.uid}-${p.id}`,
    dashboardUID: d.uid,
    panelId: p.id,
    panelName: p.title,
    panelPluginId: p.type,
    targets,
    range,
    interval,
    intervalMs,
    maxDataPoints,
    scopedVars,
    filters: srv.adHocFilters(),
    timezone: 'utc',
    startTime: Date.now(),
  };
  const replaceVariables = (text: string, vars?: ScopedVars) => srv.replace(text, { ...scopedVars, ...vars });
  const resp = await lastValueFrom(ds.query(request));
  if (resp.error || resp.errors?.length) {
    return { frames: [], error: (resp.errors ?? [resp.error]).map((e) => e?.message).join('; '), replaceVariables };
  }
  let frames = resp.data as DataFrame[];
  if (p.transformations?.length) {
    frames = await lastValueFrom(transformDataFrame(p.transformations, frames, { interpolate: replaceVariables }));
  }
  const { fc, custom } = panelFieldConfig(p);
  frames = applyFieldOverrides({
    data: frames,
    fieldConfig: fc,
    fieldConfigRegistry: registryFor(fc, custom),
    replaceVariables,
    theme,
    timeZone: 'utc',
  });
  return { frames, replaceVariables };
}

/** What a panel shows when its frames hold nothing: its noValue text, or Grafana's "No data". */
function NoValue({ p }: { p: PanelModel }) {
  return (
    <div
      data-testid="novalue"
      style={{ display: 'flex', height: '100%', alignItems: 'center', justifyContent: 'center', color: '#8e8e8e' }}
    >
      {p.fieldConfig?.defaults.noValue ?? 'No data'}
    </div>
  );
}

const isTimeSeries = (f: DataFrame) =>
  f.length > 0 && f.fields.some((x) => x.type === FieldType.time) && f.fields.some((x) => x.type === FieldType.number);

/** What every visualisation here draws from: the panel's frames in its inner size. */
interface VizProps {
  frames: DataFrame[];
  width: number;
  height: number;
  theme: GrafanaTheme2;
}

function StatViz({
  p,
  frames,
  width,
  height,
  theme,
  replaceVariables,
}: VizProps & { p: PanelModel; replaceVariables: InterpolateFunction }) {
  const o = p.options ?? {};
  const values = getFieldDisplayValues({
    data: frames,
    fieldConfig: panelFieldConfig(p).fc,
    reduceOptions: o.reduceOptions ?? { calcs: [ReducerID.lastNotNull] },
    replaceVariables,
    theme,
    timeZone: 'utc',
  });
  return (
    <VizRepeater
      source={frames}
      getValues={() => values}
      renderCounter={0}
      width={width}
      height={height}
      autoGrid
      itemSpacing={3}
      orientation={(o.orientation as VizOrientation) ?? VizOrientation.Auto}
      minVizWidth={75}
      minVizHeight={75}
      renderValue={({ value, width: w, height: h, count }) => (
        <BigValue
          value={value.display}
          width={w}
          height={h}
          theme={theme}
          count={count}
          colorMode={(o.colorMode as BigValueColorMode) ?? BigValueColorMode.Value}
          graphMode={BigValueGraphMode.None}
          justifyMode={(o.justifyMode as BigValueJustifyMode) ?? BigValueJustifyMode.Auto}
          textMode={(o.textMode as BigValueTextMode) ?? BigValueTextMode.Auto}
          text={o.text}
        />
      )}
    />
  );
}

/** @grafana/ui exports no bar chart: each row's numbers as BarGauges, labelled by the row's text. */
function BarsViz({ frames, width, height, theme }: VizProps) {
  const bars: Array<{ key: string; field: DataFrame['fields'][number]; row: number; label: string }> = [];
  for (const f of frames) {
    const label = f.fields.find((x) => x.type === FieldType.string);
    for (let row = 0; row < f.length; row++) {
      for (const field of f.fields.filter((x) => x.type === FieldType.number)) {
        bars.push({
          key: `${bars.length}`,
          field,
          row,
          label: `${label?.values[row] ?? ''} · ${getFieldDisplayName(field, f, frames)}`,
        });
      }
    }
  }
  const h = Math.max(24, Math.min(40, height / bars.length));
  // As Grafana's bar panels do, the bars share one scale: zero to the largest value drawn.
  const max = Math.max(...bars.map((b) => Number(b.field.values[b.row] ?? 0)));
  return (
    <div style={{ width, height, overflow: 'hidden' }}>
      {bars.map((b) => {
        const display = b.field.display!(b.field.values[b.row]);
        return (
          <BarGauge
            key={b.key}
            width={width}
            height={h}
            theme={theme}
            field={{ ...b.field.config, min: b.field.config.min ?? 0, max: b.field.config.max ?? max }}
            display={b.field.display}
            value={{ ...display, title: b.label }}
            orientation={VizOrientation.Horizontal}
            displayMode={BarGaugeDisplayMode.Basic}
            isOverflow={false}
          />
        );
      })}
    </div>
  );
}

/** A heatmap's buckets over time, from heatmap-cells (native histograms) or heatmap-rows (le buckets) frames. */
function heatmapGrid(f: DataFrame): { times: number[]; rows: string[]; counts: number[][] } | undefined {
  const time = f.fields.find((x) => x.type === FieldType.time);
  if (!time) {
    return undefined;
  }
  const yMin = f.fields.find((x) => x.name === 'yMin');
  const yMax = f.fields.find((x) => x.name === 'yMax');
  const count = f.fields.find((x) => x.type === FieldType.number && x !== yMin && x !== yMax && x.name !== 'yLayout');
  if (yMax && count) {
    const times = [...new Set<number>(time.values)].sort((a, b) => a - b);
    const bounds = [...new Set<number>(yMax.values)].sort((a, b) => a - b);
    const counts = bounds.map(() => times.map(() => 0));
    for (let i = 0; i < f.length; i++) {
      counts[bounds.indexOf(yMax.values[i])][times.indexOf(time.values[i])] += Number(count.values[i] ?? 0);
    }
    const label = (b: number) => (yMax.display ? yMax.display(b).text + (yMax.display(b).suffix ?? '') : String(b));
    return { times, rows: bounds.map(label), counts };
  }
  const buckets = f.fields.filter((x) => x.type === FieldType.number);
  return {
    times: time.values as number[],
    rows: buckets.map((b) => b.name),
    counts: buckets.map((b) => (b.values as Array<number | null>).map((v) => v ?? 0)),
  };
}

/**
 * @grafana/ui exports no heatmap: the buckets are drawn here as cells on a canvas (rows with
 * no count in the range left out), brighter for more, and the panel says so.
 */
function HeatmapViz({ frames, width, height, theme }: VizProps) {
  const ref = React.useRef<HTMLCanvasElement>(null);
  const grid = frames.map(heatmapGrid).find(Boolean);
  useEffect(() => {
    const ctx = ref.current?.getContext('2d');
    if (!ctx || !grid) {
      return;
    }
    const used = grid.counts.map((r, i) => ({ r, label: grid.rows[i] })).filter(({ r }) => r.some((c) => c > 0));
    const max = Math.max(1, ...used.flatMap(({ r }) => r));
    const left = 60;
    const bottom = 28;
    const cw = (width - left) / Math.max(1, grid.times.length);
    const ch = (height - bottom - 18) / Math.max(1, used.length);
    ctx.clearRect(0, 0, width, height);
    ctx.font = '11px Inter, Helvetica, Arial, sans-serif';
    ctx.fillStyle = theme.colors.text.secondary;
    used.forEach(({ r, label }, row) => {
      const y = height - bottom - (row + 1) * ch;
      if (used.length <= 12 || row % Math.ceil(used.length / 12) === 0) {
        ctx.fillStyle = theme.colors.text.secondary;
        ctx.fillText(label, 0, y + ch / 2 + 4);
      }
      r.forEach((c, col) => {
        ctx.fillStyle = `rgba(255, 120, 10, ${c > 0 ? 0.1 + 0.9 * Math.sqrt(c / max) : 0})`;
        ctx.fillRect(left + col * cw, y, Math.max(1, cw - 1), Math.max(1, ch - 1));
      });
    });
    ctx.fillStyle = theme.colors.text.secondary;
    for (let i = 0; i < grid.times.length; i += Math.ceil(grid.times.length / 8)) {
      const d = new Date(grid.times[i]);
      ctx.fillText(
        `${String(d.getUTCHours()).padStart(2, '0')}:${String(d.getUTCMinutes()).padStart(2, '0')}`,
        left + i * cw,
        height - 12
      );
    }
    ctx.fillText('cells drawn by the test page: @grafana/ui exports no heatmap', left, height);
  }, [grid, width, height, theme]);
  return <canvas ref={ref} width={width} height={height} />;
}

/** Whether a panel's frames give its visualisation something to draw (else it shows its noValue). */
function hasData(p: PanelModel, frames: DataFrame[]): boolean {
  switch (p.type) {
    case 'table':
      return (frames[p.options?.frameIndex ?? 0]?.length ?? 0) > 0;
    case 'timeseries':
      return frames.some(isTimeSeries);
    case 'heatmap':
      return frames.some((f) => heatmapGrid(f)?.counts.some((r) => r.some((c) => c > 0)));
    default:
      return frames.some((f) => f.length > 0);
  }
}

function PanelViz({
  p,
  result,
  width,
  height,
  theme,
  range,
}: {
  p: PanelModel;
  result: PanelResult;
  width: number;
  height: number;
  theme: GrafanaTheme2;
  range: TimeRange;
}) {
  const { frames } = result;
  // The stat panel draws its noValue itself (getFieldDisplayValues gives one value holding it).
  if (p.type !== 'stat' && !hasData(p, frames)) {
    return <NoValue p={p} />;
  }
  switch (p.type) {
    case 'stat':
      return (
        <StatViz
          p={p}
          frames={frames}
          width={width}
          height={height}
          theme={theme}
          replaceVariables={result.replaceVariables}
        />
      );
    case 'table':
      return (
        <Table
          data={frames[p.options?.frameIndex ?? 0]}
          width={width}
          height={height}
          cellHeight={p.options?.cellHeight}
          showTypeIcons={false}
          timeRange={range}
        />
      );
    case 'heatmap':
      return <HeatmapViz frames={frames} width={width} height={height} theme={theme} />;
    case 'timeseries':
      return (
        <TimeSeries
          frames={frames.filter(isTimeSeries)}
          width={width}
          height={height}
          timeRange={range}
          timeZone="utc"
          legend={{
            showLegend: p.options?.legend?.showLegend ?? true,
            displayMode: p.options?.legend?.displayMode ?? 'list',
            placement: p.options?.legend?.placement ?? 'bottom',
            calcs: p.options?.legend?.calcs ?? [],
          }}
          options={p.options}
        />
      );
    case 'barchart':
      return <BarsViz frames={frames} width={width} height={height} theme={theme} />;
    default:
      throw new Error(`panel type ${p.type} is not drawn by the test page`);
  }
}

/** Grafana's dashboard grid: 24 columns, rows 30 px high with 8 px between panels. */
const CELL_HEIGHT = 30;
const MARGIN = 8;

function Panel({
  p,
  d,
  ds,
  srv,
  range,
  colWidth,
}: {
  p: PanelModel;
  d: DashboardModel;
  ds: SageDatasource;
  srv: DashboardTemplateSrv;
  range: TimeRange;
  colWidth: number;
}) {
  const theme = useTheme2();
  const [result, setResult] = useState<PanelResult>();
  const { x, y, w, h } = p.gridPos;
  const width = w * colWidth - MARGIN;
  const height = h * CELL_HEIGHT + (h - 1) * MARGIN;
  useEffect(() => {
    if (p.type !== 'row') {
      runPanel(p, d, ds, srv, range, width, theme).then(setResult, (e) =>
        setResult({ frames: [], error: String(e), replaceVariables: (t: string) => t })
      );
    }
  }, [p, d, ds, srv, range, width, theme]);
  const style: React.CSSProperties = {
    position: 'absolute',
    left: x * colWidth,
    top: y * (CELL_HEIGHT + MARGIN),
    width,
    height,
  };
  if (p.type === 'row') {
    return (
      <div
        style={{ ...style, fontSize: 16, fontWeight: 500, color: '#ccccdc', display: 'flex', alignItems: 'center' }}
        data-testid={`row-${p.id}`}
      >
        {p.title}
      </div>
    );
  }
  const state = !result ? 'loading' : result.error ? 'error' : hasData(p, result.frames) ? 'data' : 'novalue';
  return (
    <div
      style={style}
      data-testid="panel"
      data-panel-id={p.id}
      data-panel-type={p.type}
      data-state={state}
      data-error={result?.error}
    >
      <PanelChrome
        title={p.title}
        description={p.description}
        width={width}
        height={height}
        loadingState={undefined}
        statusMessage={result?.error}
      >
        {(innerWidth, innerHeight) =>
          result && !result.error ? (
            <PanelViz p={p} result={result} width={innerWidth} height={innerHeight} theme={theme} range={range} />
          ) : null
        }
      </PanelChrome>
    </div>
  );
}

/** The whole dashboard: variables first, then every panel at its grid position. */
export function DashboardPage({
  settings,
  name,
  from,
  filters,
  width,
}: {
  settings: DataSourceInstanceSettings<SageOptions>;
  name: string;
  from?: string;
  filters?: AdHocVariableFilter[];
  width: number;
}) {
  const d = DASHBOARDS[name];
  const [state, setState] = useState<{ ds: SageDatasource; srv: DashboardTemplateSrv; range: TimeRange }>();
  const [error, setError] = useState('');
  useEffect(() => {
    const srv = new DashboardTemplateSrv();
    setTemplateSrv(srv);
    const ds = new SageDatasource(settings, srv);
    const range = rangeUtil.convertRawToRange({ from: from ?? d.time.from, to: d.time.to });
    resolveVariables(d, ds, srv, range, filters).then(
      () => setState({ ds, srv, range }),
      (e) => setError(String(e))
    );
  }, [settings, d, from, filters]);
  if (error) {
    return <div data-testid="dashboard-error">{error}</div>;
  }
  if (!state) {
    return null;
  }
  const colWidth = width / 24;
  const bottom = Math.max(...d.panels.map((p) => p.gridPos.y + p.gridPos.h));
  const vars = [...state.srv.vars.values()].filter(
    (v) => v.model.type !== 'datasource' && v.model.name !== 'aws_console'
  );
  return (
    <div data-testid="dashboard" data-uid={d.uid}>
      <div style={{ color: '#ccccdc', fontSize: 20, marginBottom: 8 }}>{d.title}</div>
      <div
        data-testid="variables"
        style={{ display: 'flex', flexWrap: 'wrap', gap: 8, marginBottom: 12, fontSize: 12, color: '#ccccdc' }}
      >
        {vars.map((v) => (
          <span
            key={v.model.name}
            data-variable={v.model.name}
            style={{ border: '1px solid #2d2e34', padding: '4px 8px', borderRadius: 2 }}
          >
            {v.model.name} = {v.value === ALL ? 'All' : v.text}
          </span>
        ))}
      </div>
      <div style={{ position: 'relative', width, height: bottom * (CELL_HEIGHT + MARGIN) }}>
        {d.panels.map((p) => (
          <Panel key={p.id} p={p} d={d} ds={state.ds} srv={state.srv} range={state.range} colWidth={colWidth} />
        ))}
      </div>
    </div>
  );
}
