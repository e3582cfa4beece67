import { createDataFrame, FieldType } from '@grafana/data';

import { framesToEvents, prepareAnnotation, SageAnnotation } from './annotations';

const anno = (extra: Partial<SageAnnotation> = {}): SageAnnotation => ({
  name: 'Scaling',
  enable: true,
  iconColor: 'red',
  ...extra,
});

function frame(values: Array<number | null>, labels: Record<string, string>, interval?: number) {
  return createDataFrame({
    refId: 'Anno',
    fields: [
      { name: 'Time', type: FieldType.time, values: values.map((_, i) => 60_000 * (i + 1)), config: { interval } },
      { name: 'e2e_duration', type: FieldType.number, values, labels },
    ],
  });
}

describe('prepareAnnotation', () => {
  it('builds a range target from a Prometheus-style annotation', () => {
    const out = prepareAnnotation(anno({ expr: 'e2e_duration > 0', step: '60s' }));
    expect(out.target).toEqual({
      refId: 'Anno',
      expr: 'e2e_duration > 0',
      interval: '60s',
      range: true,
      instant: false,
      format: 'time_series',
    });
  });

  it('keeps an existing target but forces a range query', () => {
    const out = prepareAnnotation(anno({ target: { refId: 'X', expr: 'up', instant: true, interval: '2m' } }));
    expect(out.target).toMatchObject({ refId: 'X', expr: 'up', interval: '2m', range: true, instant: false });
  });

  it('asks the backend for framed events of a changes annotation, with its filters', () => {
    const out = prepareAnnotation(anno({ target: { refId: '', queryType: 'changes', endpoint: '$endpoint' } }));
    expect(out.target).toEqual({ refId: 'Anno', queryType: 'changes', endpoint: '$endpoint', format: 'annotations' });
  });
});

describe('framesToEvents', () => {
  const labels = { 'aws.sagemaker.endpoint.name': 'ep', 'aws.sagemaker.scaling.direction': 'ScaleOut' };

  it('turns runs of positive samples into events titled from the template', () => {
    const events = framesToEvents(
      [frame([0, 5, 7, 0, 3, null], labels, 60_000)],
      anno({
        titleFormat: '{{aws.sagemaker.scaling.direction}} {{aws.sagemaker.endpoint.name}}',
        textFormat: '{{aws.sagemaker.endpoint.name}} scaled',
        tagKeys: 'aws.sagemaker.endpoint.name, nope',
      })
    );
    expect(events).toEqual([
      { time: 120_000, timeEnd: 180_000, isRegion: true, title: 'ScaleOut ep', text: 'ep scaled', tags: ['ep'] },
      { time: 300_000, timeEnd: 300_000, isRegion: false, title: 'ScaleOut ep', text: 'ep scaled', tags: ['ep'] },
    ]);
  });

  it('splits a run at a gap longer than the step', () => {
    const f = createDataFrame({
      fields: [
        { name: 'Time', type: FieldType.time, values: [60_000, 120_000, 600_000] },
        { name: 'v', type: FieldType.number, values: [1, 1, 1] },
      ],
    });
    const events = framesToEvents([f], anno());
    expect(events.map((e) => [e.time, e.timeEnd])).toEqual([
      [60_000, 120_000],
      [600_000, 600_000],
    ]);
  });

  it('yields nothing for all-zero series', () => {
    expect(framesToEvents([frame([0, 0], labels)], anno())).toEqual([]);
  });
});

describe('framed events (alarm history, inventory)', () => {
  const events = (fields: Parameters<typeof createDataFrame>[0]['fields']) =>
    framesToEvents(
      [createDataFrame({ refId: 'Anno', fields })],
      anno({ target: { refId: 'Anno', queryType: 'inventory' } })
    );

  it('takes time, title, text and tags per row, whatever the row order', () => {
    expect(
      events([
        { name: 'time', type: FieldType.time, values: [3000, '1970-01-01T00:00:01Z'] },
        { name: 'title', type: FieldType.string, values: ['IC chat-llama created', 'endpoint chat updated'] },
        { name: 'text', type: FieldType.string, values: ['2 copies', 'config chat-v2'] },
        { name: 'tags', type: FieldType.string, values: ['chat,chat-llama', ' chat , update '] },
      ])
    ).toEqual([
      { time: 1000, title: 'endpoint chat updated', text: 'config chat-v2', tags: ['chat', 'update'] },
      { time: 3000, title: 'IC chat-llama created', text: '2 copies', tags: ['chat', 'chat-llama'] },
    ]);
  });

  it('needs only the time; a frame without one has no events', () => {
    expect(events([{ name: 'time', type: FieldType.time, values: [5] }])).toEqual([
      { time: 5, title: '', text: '', tags: [] },
    ]);
    expect(events([{ name: 'title', type: FieldType.string, values: ['x'] }])).toEqual([]);
  });

  it('does not read PromQL frames as framed events', () => {
    const promql = createDataFrame({
      fields: [
        { name: 'time', type: FieldType.time, values: [60_000] },
        { name: 'title', type: FieldType.string, values: ['x'] },
      ],
    });
    expect(framesToEvents([promql], anno({ target: { refId: 'Anno', expr: 'up' } }))).toEqual([]);
  });
});
