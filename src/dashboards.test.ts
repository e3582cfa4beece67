import {
  applyFieldOverrides,
  createTheme,
  DataFrame,
  dataFrameFromJSON,
  DataTransformerConfig,
  FieldType,
  getFieldDisplayName,
  getFieldDisplayValues,
  standardTransformers,
  standardTransformersRegistry,
  transformDataFrame,
} from '@grafana/data';
import * as fs from 'fs';
import * as path from 'path';
import { lastValueFrom } from 'rxjs';

import { applyFormats } from './format';
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
const panels: Array<[string, Panel]> = ['performance', 'capacity', 'reliability'].flatMap((name) => {
  const d = JSON.parse(fs.readFileSync(path.join(__dirname, 'dashboards', `${name}.json`), 'utf8'));
  return d.panels
    .filter((p: Panel) => p.type === 'stat' || p.type === 'barchart')
    .map((p: Panel) => [`${name}/${p.id}`, p]);
});

// Grafana's registry is filled by the app at start-up; tests register the standard ones.
const ids = new Set<string>();
standardTransformersRegistry.setInit(() =>
  Object.values(standardTransformers)
    .filter((t) => !ids.has(t.id) && ids.add(t.id))
    .map((t) => ({
      id: t.id,
      name: t.name,
      description: t.description ?? '',
      transformation: t,
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

async function panelData(panel: Panel, frames: DataFrame[]): Promise<DataFrame[]> {
  let data = applyFormats(frames, panel.targets, false);
  if (panel.transformations?.length) {
    data = await lastValueFrom(transformDataFrame(panel.transformations, data));
  }
  return applyFieldOverrides({
    data,
    fieldConfig: panel.fieldConfig,
    replaceVariables: (s: string) => s,
    theme,
    timeZone: 'utc',
  });
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
