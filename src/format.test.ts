import { createDataFrame, DataFrame, DataFrameType, FieldType, Labels } from '@grafana/data';

import { applyFormats, bucketsToHeatmap, framesToTable } from './format';
import { SageQuery } from './types';

/** A frame shaped like the backend's matrix/vector frames: Time + value named after the metric. */
function series(
  refId: string,
  labels: Labels,
  points: Array<[number, number]>,
  name = labels.__name__ ?? 'Value'
): DataFrame {
  const { __name__, ...rest } = labels;
  return createDataFrame({
    refId,
    fields: [
      { name: 'Time', type: FieldType.time, values: points.map((p) => p[0]) },
      { name, type: FieldType.number, values: points.map((p) => p[1]), labels: rest },
    ],
  });
}

const columns = (f: DataFrame) => f.fields.map((x) => x.name);
const column = (f: DataFrame, name: string) => f.fields.find((x) => x.name === name)?.values;

describe('framesToTable', () => {
  it('makes one row per sample with a column per label, ordered by time', () => {
    const table = framesToTable(
      [
        series('A', { __name__: 'up', 'aws.sagemaker.endpoint.name': 'b' }, [
          [2000, 1],
          [4000, 2],
        ]),
        series('A', { __name__: 'up', 'aws.sagemaker.endpoint.name': 'a', '@resource.host.id': 'i-1' }, [[3000, 7]]),
      ],
      'A',
      false
    );
    expect(columns(table)).toEqual(['Time', '@resource.host.id', '__name__', 'aws.sagemaker.endpoint.name', 'Value']);
    expect(column(table, 'Time')).toEqual([2000, 3000, 4000]);
    expect(column(table, 'aws.sagemaker.endpoint.name')).toEqual(['b', 'a', 'b']);
    expect(column(table, '@resource.host.id')).toEqual(['', 'i-1', '']);
    expect(column(table, 'Value')).toEqual([1, 7, 2]);
    expect(table.meta?.preferredVisualisationType).toBe('table');
  });

  it("keeps the query inspector's executed query and stats", () => {
    const a = series('A', { __name__: 'up' }, [[1, 1]]);
    const b = series('A', { __name__: 'up', x: 'y' }, [[1, 2]]);
    const stats = [{ displayName: 'Results cache: hit (upstream calls)', value: 0 }];
    b.meta = { executedQueryString: 'Expr: up\nStep: 1m\nTime: 2026-06-05T13:00:00Z', stats };
    const table = framesToTable([a, b], 'A', false);
    expect(table.meta).toEqual({
      executedQueryString: b.meta.executedQueryString,
      stats,
      preferredVisualisationType: 'table',
    });
    expect(framesToTable([a], 'A', false).meta).toStrictEqual({ preferredVisualisationType: 'table' });
  });

  it('names the value column by refId when several table queries share a panel', () => {
    const table = framesToTable([series('B', { __name__: 'up' }, [[1, 1]])], 'B', true);
    expect(columns(table)).toContain('Value #B');
  });
});

describe('bucketsToHeatmap', () => {
  it('sorts classic buckets by bound and de-accumulates them', () => {
    const frames = [
      series('A', { __name__: 'lat_bucket', le: '+Inf' }, [
        [1000, 10],
        [2000, 20],
      ]),
      series('A', { __name__: 'lat_bucket', le: '0.5' }, [
        [1000, 6],
        [2000, 15],
      ]),
      series('A', { __name__: 'lat_bucket', le: '0.1' }, [
        [1000, 2],
        [2000, 5],
      ]),
    ];
    const [heatmap] = bucketsToHeatmap(frames, 'A');
    expect(heatmap.meta?.type).toBe(DataFrameType.HeatmapRows);
    expect(columns(heatmap)).toEqual(['Time', '0.1', '0.5', '+Inf']);
    expect(column(heatmap, '0.1')).toEqual([2, 5]);
    expect(column(heatmap, '0.5')).toEqual([4, 10]);
    expect(column(heatmap, '+Inf')).toEqual([4, 5]);
  });

  it("keeps the query inspector's PromQL and stats on the first heatmap, the notices on each", () => {
    const notice = { severity: 'info' as const, text: 'the ad-hoc filter az=x is ignored' };
    const withMeta = (f: DataFrame, executedQueryString?: string): DataFrame => ({
      ...f,
      meta: {
        executedQueryString,
        stats: executedQueryString ? [{ displayName: 'samples', value: 3 }] : undefined,
        notices: [notice],
      },
    });
    const out = bucketsToHeatmap(
      [
        withMeta(series('A', { __name__: 'b', le: '1', ep: 'x' }, [[1, 1]]), 'sum by (le, ep) (rate(b[5m]))'),
        withMeta(series('A', { __name__: 'b', le: '+Inf', ep: 'x' }, [[1, 2]])),
        withMeta(series('A', { __name__: 'b', le: '1', ep: 'y' }, [[1, 3]])),
      ],
      'A'
    );
    // Grafana's inspector lists the stats of every frame: on each heatmap they would show twice.
    expect(out.map((f) => f.meta)).toEqual([
      {
        type: DataFrameType.HeatmapRows,
        executedQueryString: 'sum by (le, ep) (rate(b[5m]))',
        stats: [{ displayName: 'samples', value: 3 }],
        notices: [notice],
      },
      { type: DataFrameType.HeatmapRows, notices: [notice] },
    ]);
  });

  it('keeps one heatmap per label set and passes native histogram frames through', () => {
    const native = createDataFrame({ refId: 'A', meta: { type: DataFrameType.HeatmapCells }, fields: [] });
    const out = bucketsToHeatmap(
      [
        series('A', { __name__: 'b', le: '1', ep: 'x' }, [[1, 1]]),
        series('A', { __name__: 'b', le: '1', ep: 'y' }, [[1, 3]]),
        native,
      ],
      'A'
    );
    expect(out).toHaveLength(3);
    expect(out[2]).toBe(native);
  });
});

describe('applyFormats', () => {
  const frames = [series('A', { __name__: 'up' }, [[1, 1]]), series('B', { __name__: 'up' }, [[1, 2]])];

  it('leaves time series alone and tables only their own query', () => {
    const targets: SageQuery[] = [
      { refId: 'A', format: 'time_series' },
      { refId: 'B', format: 'table' },
    ];
    const out = applyFormats(frames, targets, false);
    expect(out[0]).toBe(frames[0]);
    expect(columns(out[1])).toEqual(['Time', '__name__', 'Value']);
  });

  it('shows instant results as a table in Explore, with the base refId', () => {
    const instant = [series('A-Instant', { __name__: 'up' }, [[1, 5]])];
    const targets: SageQuery[] = [{ refId: 'A-Instant', instant: true, range: false, format: 'time_series' }];
    expect(applyFormats(instant, targets, false)[0]).toBe(instant[0]);
    const [table] = applyFormats(instant, targets, true);
    expect(table.refId).toBe('A');
    expect(column(table, 'Value')).toEqual([5]);
  });

  it('passes diagnosis frames through', () => {
    const diag = createDataFrame({ refId: 'D', fields: [{ name: 'cause', type: FieldType.string, values: ['x'] }] });
    expect(applyFormats([diag], [{ refId: 'D', queryType: 'diagnosis', format: 'table' }], false)).toEqual([diag]);
  });
});
