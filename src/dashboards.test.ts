import {
  applyFieldOverrides,
  createTheme,
  createDataFrame,
  DataFrame,
  dataFrameFromJSON,
  dataLinksOverrideProcessor,
  DataTransformerConfig,
  displayNameOverrideProcessor,
  FieldConfigOptionsRegistry,
  FieldConfigPropertyItem,
  FieldType,
  getFieldDisplayName,
  getFieldDisplayValues,
  numberOverrideProcessor,
  ScopedVars,
  standardTransformers,
  standardTransformersRegistry,
  stringOverrideProcessor,
  thresholdsOverrideProcessor,
  transformDataFrame,
  valueMappingsOverrideProcessor,
} from '@grafana/data';
import * as fs from 'fs';
import * as path from 'path';
import { lastValueFrom } from 'rxjs';

import { applyFormats } from './format';
import { ALARMS_FRAME_FIELDS, INVENTORY_FRAME_FIELDS } from './testing';
import { consoleOrigin } from './variables';
import { SageQuery } from './types';

// The generated dashboards' stat and bar chart panels, fed the frames the plugin returned for
// them from the emulator (dashboards/testdata/panel-frames.json, recorded by the rig's
// TestPanelFrames), through our table formatting and Grafana's own transformations, field
// overrides and reduce: every returned series must stay one value (one tile, one bar).

interface Panel {
  id: number;
  type: string;
  title: string;
  targets: SageQuery[];
  transformations?: DataTransformerConfig[];
  fieldConfig: { defaults: object; overrides: [] };
  options: {
    reduceOptions?: { values?: boolean; calcs: string[]; fields?: string };
    orientation?: string;
    xField?: string;
  };
}

const root = path.join(__dirname, '..');
const recorded: Record<string, { results: Record<string, { frames?: object[] }> }> = JSON.parse(
  fs.readFileSync(path.join(root, 'dashboards/testdata/panel-frames.json'), 'utf8')
);
const allPanels: Array<[string, Panel]> = ['performance', 'capacity', 'reliability'].flatMap((name) => {
  const d = JSON.parse(fs.readFileSync(path.join(__dirname, 'dashboards', `${name}.json`), 'utf8'));
  return d.panels
    .filter((p: Panel) => p.type === 'stat' || p.type === 'barchart')
    .map((p: Panel) => [`${name}/${p.id}`, p]);
});
// Tiles of the alarms query are one tile per row, not per series: tested below on a frame of
// the contract's shape.
const readsAlarms = (p: Panel) => p.targets.some((t) => t.queryType === 'alarms');
const panels = allPanels.filter(([, p]) => !readsAlarms(p));
const alarmPanels = allPanels.filter(([, p]) => readsAlarms(p));

// Grafana's registry is filled by the app at start-up; tests register the standard ones.
// @grafana/data 13 exports them only as this deprecated object (the app reads the registry).
const ids = new Set<string>();
standardTransformersRegistry.setInit(() =>
  // eslint-disable-next-line @typescript-eslint/no-deprecated -- no other export of the transformers
  Object.values(standardTransformers)
    .filter((t) => !ids.has(t.id) && ids.add(t.id))
    .map((t) => ({
      id: t.id,
      name: t.name,
      description: t.description ?? '',
      transformation: () => Promise.resolve(t),
      editor: () => null,
      imageDark: '',
      imageLight: '',
    }))
);

const theme = createTheme();

function framesOf(key: string): DataFrame[] {
  const results = recorded[key]?.results ?? {};
  return Object.entries(results).flatMap(([refId, r]) =>
    (r.frames ?? []).map((f) => ({ ...dataFrameFromJSON(f as Parameters<typeof dataFrameFromJSON>[0]), refId }))
  );
}

/** Series the plugin returned: numeric fields with at least one value. */
function seriesCount(frames: DataFrame[]): number {
  return frames.flatMap((f) => f.fields).filter((f) => f.type === FieldType.number && f.values.length > 0).length;
}

async function panelData(
  panel: Panel,
  frames: DataFrame[],
  fieldConfigRegistry?: FieldConfigOptionsRegistry,
  replaceVariables: (s: string, scopedVars?: ScopedVars) => string = (s) => s
): Promise<DataFrame[]> {
  let data = applyFormats(frames, panel.targets, false);
  if (panel.transformations?.length) {
    data = await lastValueFrom(transformDataFrame(panel.transformations, data));
  }
  return applyFieldOverrides({
    data,
    fieldConfig: panel.fieldConfig,
    fieldConfigRegistry,
    replaceVariables,
    theme,
    timeZone: 'utc',
  });
}

/**
 * The standard field options the alarm tiles set, processed by @grafana/data's own
 * processors (the app registers the full set at start-up; tests have none).
 */
function fieldOptions(): FieldConfigOptionsRegistry {
  const registry = new FieldConfigOptionsRegistry();
  const item = (id: string, process: FieldConfigPropertyItem['process']) =>
    ({
      id,
      path: id,
      name: id,
      process,
      shouldApply: () => true,
      override: () => null,
      editor: () => null,
      settings: {},
    }) as unknown as FieldConfigPropertyItem;
  registry.setInit(() => [
    item('displayName', displayNameOverrideProcessor),
    item('mappings', valueMappingsOverrideProcessor),
    item('thresholds', thresholdsOverrideProcessor),
    item('links', dataLinksOverrideProcessor),
    item('decimals', numberOverrideProcessor),
    item('unit', stringOverrideProcessor),
    item('noValue', stringOverrideProcessor),
  ]);
  return registry;
}

describe('generated stat and bar chart panels', () => {
  it('have recorded frames for every panel', () => {
    expect(panels.length).toBeGreaterThan(20);
    for (const [key] of panels) {
      expect([key, key in recorded]).toEqual([key, true]);
    }
  });

  it.each(panels.filter(([, p]) => p.type === 'stat'))('%s keeps one value per returned series', async (key, panel) => {
    const frames = framesOf(key);
    const reduce = panel.options.reduceOptions!;
    // Spelled out, so no Grafana version's defaults decide how series collapse.
    expect(reduce.values).toBe(false);
    expect(reduce.fields).toBe('');
    expect(reduce.calcs).toHaveLength(1);
    expect(['auto', 'horizontal', 'vertical']).toContain(panel.options.orientation);
    const data = await panelData(panel, frames);
    const values = getFieldDisplayValues({
      fieldConfig: panel.fieldConfig,
      reduceOptions: reduce,
      replaceVariables: (s: string) => s,
      theme,
      data,
      timeZone: 'utc',
    });
    const n = seriesCount(frames);
    expect(n).toBeGreaterThan(0);
    expect(values).toHaveLength(n);
    // Several tiles must be told apart by their names.
    expect(new Set(values.map((v) => v.display.title)).size).toBe(n > 1 ? n : 1);
  });

  it.each(panels.filter(([, p]) => p.type === 'barchart'))(
    '%s gets one frame with its x field and a bar per series',
    async (key, panel) => {
      const frames = framesOf(key);
      const data = await panelData(panel, frames);
      expect(data).toHaveLength(1);
      const [frame] = data;
      expect(frame.length).toBeGreaterThan(0);
      const x = frame.fields.find((f) => getFieldDisplayName(f, frame, data) === panel.options.xField);
      expect(x?.type).toBe(FieldType.string);
      // Every query's series is a column, and every x value a row.
      const numeric = frame.fields.filter((f) => f.type === FieldType.number);
      expect(numeric).toHaveLength(panel.targets.length);
      const xs = new Set(
        frames.map((f) => Object.values(f.fields.find((g) => g.type === FieldType.number)?.labels ?? {}).join('|'))
      );
      expect(frame.length).toBe(xs.size);
    }
  );
});

/**
 * Resolves ${__data.fields.name} from the row a stat value came from, and the hidden console
 * variables as the data source answers them in eu-west-1, as Grafana's template service does.
 */
function rowVariables(text: string, scopedVars?: ScopedVars): string {
  const ctx = scopedVars?.__dataContext?.value as { frame: DataFrame; rowIndex?: number } | undefined;
  const dashboardVars: Record<string, string> = { aws_region: 'eu-west-1', aws_console: consoleOrigin('eu-west-1') };
  text = text.replace(/\$\{(aws_region|aws_console)\}/g, (_, name) => dashboardVars[name]);
  return text.replace(/\$\{__data\.fields\.([a-z_]+)\}/g, (m, name) => {
    const field = ctx?.frame.fields.find((f) => f.name === name);
    return field && ctx?.rowIndex !== undefined ? String(field.values[ctx.rowIndex]) : m;
  });
}

/** One row of the alarms frame (issue 11 contract): resource, type, state, severity, source. */
type AlarmRow = [string, string, string, number, string];

function alarmsFrame(refId: string, rows: AlarmRow[]): DataFrame {
  const column = (name: string): unknown[] =>
    rows.map(([resource, type, state, severity, source]) => {
      switch (name) {
        case 'resource':
          return resource;
        case 'resource_type':
          return type;
        case 'endpoint':
          return type === 'endpoint' ? resource : 'chat';
        case 'inference_component':
          return type === 'inference_component' ? resource : '';
        case 'state':
          return state;
        case 'severity':
          return severity;
        case 'source':
          return source;
        case 'alarms':
          return source === 'alarm' ? 1 : 0;
        case 'threshold':
          return 0.95;
        case 'updated':
          return Date.UTC(2026, 0, 1);
        case 'region':
          return 'eu-west-1';
        default:
          return `${name} of ${resource}`;
      }
    });
  return createDataFrame({
    refId,
    name: 'alarms',
    fields: ALARMS_FRAME_FIELDS.map(([name, type]) => ({ name, type, values: column(name) })),
  });
}

/** The tiles an alarm panel draws when every target answers the same alarms frame. */
async function alarmTiles(panel: Panel, rows: AlarmRow[]) {
  const frames = panel.targets.map((t) => alarmsFrame(t.refId, rows));
  const data = await panelData(panel, frames, fieldOptions(), rowVariables);
  return getFieldDisplayValues({
    fieldConfig: panel.fieldConfig,
    reduceOptions: panel.options.reduceOptions!,
    replaceVariables: rowVariables,
    theme,
    data,
    timeZone: 'utc',
  });
}

describe('alarm health tiles', () => {
  const rows: AlarmRow[] = [
    ['chat-llama', 'inference_component', 'ALARM', 3, 'alarm'],
    ['chat-qwen', 'inference_component', 'ALARM', 3, 'threshold'],
    ['i-0abc', 'instance', 'INSUFFICIENT_DATA', 2, 'alarm'],
    ['chat', 'endpoint', 'OK', 1, 'alarm'],
    ['embed', 'endpoint', 'OK', 1, 'threshold'],
    ['batch', 'endpoint', 'NO_ALARM', 0, 'none'],
  ];

  it('exist', () => {
    expect(alarmPanels.map(([key]) => key)).toEqual(['performance/37']);
  });

  it.each(alarmPanels)('%s: a tile for each of 300 resources (Grafana shows 25 rows by default)', async (_, panel) => {
    const many: AlarmRow[] = Array.from({ length: 300 }, (_, i) => [
      `ic-${i}`,
      'inference_component',
      'OK',
      1,
      i % 2 ? 'alarm' : 'threshold',
    ]);
    const values = await alarmTiles(panel, many);
    expect(new Set(values.map((v) => v.display.title)).size).toBe(300);
  });

  it.each(alarmPanels)(
    '%s: one tile per resource, named, coloured and labelled by state and source',
    async (_, panel) => {
      const values = await alarmTiles(panel, rows);
      const color = (name: string) => theme.visualization.getColorByName(name);
      const tiles = Object.fromEntries(values.map((v) => [v.display.title, [v.display.text, v.display.color]]));
      expect(tiles).toEqual({
        'chat-llama': ['ALARM', color('red')],
        'chat-qwen': ['ALARM (threshold)', color('red')],
        'i-0abc': ['Insufficient data', color('#e0b400')],
        chat: ['OK', color('green')],
        embed: ['OK (threshold)', color('green')],
        batch: ['No alarm', color('#c7d0d9')],
      });
      // A click filters the dashboard to the tile's own endpoint / IC and opens its console page.
      const tile = values.find((v) => v.display.title === 'chat-llama')!;
      const links = (tile.getLinks?.() ?? []).map((l) => l.href);
      expect(links.some((href) => href.includes('var-inference_component=chat-llama'))).toBe(true);
      expect(links).toContain('console_url of chat-llama');
      expect(links).toContain('alarm_url of chat-llama');
    }
  );
});

/** A panel of a generated dashboard, by "dashboard/id". */
function panelByKey(key: string): Panel {
  const [name, id] = key.split('/');
  const d = JSON.parse(fs.readFileSync(path.join(__dirname, 'dashboards', `${name}.json`), 'utf8'));
  return d.panels.find((p: Panel) => p.id === Number(id));
}

/** An inventory table frame: a variant row of a single-model endpoint and an IC row. */
function inventoryFrame(): DataFrame {
  const rows: Array<Record<string, unknown>> = [
    { kind: 'variant', endpoint: 'embed', inference_component: '', console_url: 'https://console/embed' },
    {
      kind: 'inference_component',
      endpoint: 'chat',
      inference_component: 'chat-llama',
      console_url: 'https://console/chat-llama',
    },
  ];
  return createDataFrame({
    refId: 'A',
    name: 'inventory',
    fields: INVENTORY_FRAME_FIELDS.map(([name, type]) => ({
      name,
      type,
      values: rows.map((r) => r[name] ?? (name === 'region' ? 'eu-west-1' : type === FieldType.string ? `${name}` : 1)),
    })),
  });
}

describe('alarm and inventory tables', () => {
  // Every data link of every cell resolves against the frame the table shows: a field the
  // links read must survive the panel's transformations.
  it.each([
    ['performance/38', () => [alarmsFrame('A', [['chat-llama', 'inference_component', 'ALARM', 3, 'alarm']])]],
    ['reliability/26', () => [inventoryFrame()]],
  ])('%s: every link resolves on every row', async (key, frames) => {
    const panel = panelByKey(key);
    const data = await panelData(panel, frames(), fieldOptions(), rowVariables);
    let links = 0;
    for (const frame of data) {
      for (const field of frame.fields) {
        for (let row = 0; row < frame.length; row++) {
          for (const l of field.getLinks?.({ valueRowIndex: row }) ?? []) {
            links++;
            expect([field.name, l.title, l.href]).toEqual([
              field.name,
              l.title,
              expect.not.stringMatching(/\$\{(__data|aws_)/),
            ]);
          }
        }
      }
    }
    expect(links).toBeGreaterThan(4);
  });

  it("opens the row's own console page and its region's Logs Insights", async () => {
    const data = await panelData(panelByKey('reliability/26'), [inventoryFrame()], fieldOptions(), rowVariables);
    const ic = data[0].fields.find((f) => f.name === 'inference_component')!;
    const hrefs = (ic.getLinks?.({ valueRowIndex: 1 }) ?? []).map((l) => l.href);
    expect(hrefs).toContain('https://console/chat-llama');
    expect(hrefs.some((h) => h.includes('var-inference_component=chat-llama') && h.includes('var-endpoint=chat'))).toBe(
      true
    );
    expect(
      hrefs.some(
        (h) =>
          h.startsWith('https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1#') &&
          h.includes('*2faws*2fsagemaker*2fInferenceComponents*2fchat-llama')
      )
    ).toBe(true);
  });
});
