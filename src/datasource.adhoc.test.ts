import { CoreApp, createDataFrame, DataFrame, DataQueryRequest, dateTime, FieldType } from '@grafana/data';
import { BackendSrv, setBackendSrv } from '@grafana/runtime';
import { firstValueFrom } from 'rxjs';

import { answerQueries, fakeResources, testDatasource } from './testing';
import { SageQuery } from './types';

// The data source's ad-hoc filter and Explore filter-for/out surface, as Grafana calls it.

const fetchMock = jest.fn();
setBackendSrv({ fetch: fetchMock } as unknown as BackendSrv);

const EP = 'aws.sagemaker.endpoint.name';
const range = { from: dateTime(1_000_000), to: dateTime(4_600_000), raw: { from: 'now-1h', to: 'now' } };

function setup() {
  const fetcher = fakeResources({
    'api/v1/labels': ['__name__', EP],
    'api/v1/label/aws.sagemaker.endpoint.name/values': ['chat', 'a"b\\c\nd'],
  });
  return { fetcher, ds: testDatasource(fetcher, { region: { value: 'us-west-2' } }) };
}

describe('getTagKeys and getTagValues', () => {
  it('ask the first query’s region with the other filters, once per burst', async () => {
    const { fetcher, ds } = setup();
    const queries = [{ refId: 'A', region: '$region' }] as SageQuery[];
    const keys = await Promise.all([1, 2, 3].map(() => ds.getTagKeys({ filters: [], timeRange: range, queries })));
    expect(keys[2].map((k) => k.text)).toEqual([EP]);
    const values = await ds.getTagValues({
      key: EP,
      filters: [{ key: 'gpu', operator: '=', value: '0' }],
      timeRange: range,
    });
    expect(values.map((v) => v.text)).toEqual(['chat', 'a"b\\c\nd']);
    expect(fetcher.calls.map((c) => [c.path, c.params.region, c.params['match[]']])).toEqual([
      ['api/v1/labels', 'us-west-2', undefined],
      ['api/v1/label/aws.sagemaker.endpoint.name/values', undefined, ['{gpu="0"}']],
    ]);
  });
});

describe('Explore filter for / out', () => {
  const { ds } = setup();
  const q: SageQuery = {
    refId: 'A',
    expr: 'sum(rate(vllm:prompt_tokens_total[5m])) / sum(sum_over_time(Invocations[5m]))',
  };
  const value = 'a"b\\c\nd';

  it('modifyQuery adds the matcher, replacing the opposite one', () => {
    const forIt = ds.modifyQuery(q, { type: 'ADD_FILTER', options: { key: EP, value } });
    expect(forIt.expr).toBe(
      'sum(rate(vllm:prompt_tokens_total{"aws.sagemaker.endpoint.name"="a\\"b\\\\c\\nd"}[5m])) / sum(sum_over_time(Invocations[5m]))'
    );
    const outIt = ds.modifyQuery(forIt, { type: 'ADD_FILTER_OUT', options: { key: EP, value } });
    expect(outIt.expr).toBe(
      'sum(rate(vllm:prompt_tokens_total{"aws.sagemaker.endpoint.name"!="a\\"b\\\\c\\nd"}[5m])) / sum(sum_over_time(Invocations[5m]))'
    );
    expect(ds.getSupportedQueryModifications()).toEqual(['ADD_FILTER', 'ADD_FILTER_OUT']);
    expect(ds.modifyQuery(q, { type: 'ADD_STRING_FILTER', options: { value: 'x' } })).toBe(q);
  });

  it('toggleQueryFilter adds then removes; queryHasFilter follows', () => {
    const on = ds.toggleQueryFilter(q, { type: 'FILTER_FOR', options: { key: EP, value } });
    expect(ds.queryHasFilter(on, { key: EP, value })).toBe(true);
    const off = ds.toggleQueryFilter(on, { type: 'FILTER_FOR', options: { key: EP, value } });
    expect(off.expr).toBe(q.expr);
    expect(ds.queryHasFilter(off, { key: EP, value })).toBe(false);
  });

  // The non-PromQL types' frames name endpoints, ICs, regions and accounts in columns (alarms
  // and inventory: endpoint…; cost: Endpoint…) or labels; a filter for one narrows that field.
  it.each([
    ['alarms', 'endpoint', 'chat', 'endpoint'],
    ['inventory', 'inference_component', 'ic-1', 'inferenceComponent'],
    ['alarmHistory', EP, 'chat', 'endpoint'],
    ['diagnosis', 'aws.sagemaker.inference_component.name', 'ic-1', 'inferenceComponent'],
    ['cost', 'Endpoint', 'chat', 'endpoint'],
    ['cost', 'Account', '123456789012', 'account'],
    ['cost', 'Region', 'eu-west-1', 'region'],
  ] as const)('%s: filter for %s narrows the query, a second toggle undoes it', (queryType, key, name, field) => {
    const query: SageQuery = { refId: 'A', queryType, [field]: 'other,' + name };
    const forIt = ds.modifyQuery(query, { type: 'ADD_FILTER', options: { key, value: name } });
    expect(forIt).toEqual({ ...query, [field]: name });
    expect(ds.queryHasFilter(forIt, { key, value: name })).toBe(true);
    expect(ds.queryHasFilter(query, { key, value: name })).toBe(false);
    const on = ds.toggleQueryFilter(query, { type: 'FILTER_FOR', options: { key, value: name } });
    expect(on).toEqual(forIt);
    const off = ds.toggleQueryFilter(on, { type: 'FILTER_FOR', options: { key, value: name } });
    expect(off).toEqual({ ...query, [field]: '' });
    expect(ds.queryHasFilter(off, { key, value: name })).toBe(false);
  });

  it.each([
    ['a filter out: the names cannot exclude one', 'alarms', 'ADD_FILTER_OUT', 'endpoint'],
    ['a column that names no endpoint, IC, region or account', 'alarms', 'ADD_FILTER', 'state'],
    ['the account on a type without one', 'inventory', 'ADD_FILTER', 'account'],
  ] as const)('leaves a non-PromQL query alone for %s', (_, queryType, type, key) => {
    const query: SageQuery = { refId: 'A', queryType, endpoint: 'chat' };
    expect(ds.modifyQuery(query, { type, options: { key, value: 'x' } })).toBe(query);
    const toggle = type === 'ADD_FILTER' ? 'FILTER_FOR' : 'FILTER_OUT';
    expect(ds.toggleQueryFilter(query, { type: toggle, options: { key, value: 'x' } })).toBe(query);
    expect(ds.queryHasFilter(query, { key, value: 'x' })).toBe(false);
  });
});

describe('query with ad-hoc filters', () => {
  beforeEach(() => fetchMock.mockReset());

  const frame = (refId: string) =>
    createDataFrame({ refId, fields: [{ name: 'resource', type: FieldType.string, values: ['chat'] }] });

  it('filters every target, notes what each ignores, and does not send a target left with nothing', async () => {
    answerQueries(fetchMock, [frame('A'), frame('B')]);
    const { ds } = setup();
    const request = {
      targets: [
        { refId: 'A', expr: 'vllm:num_requests_running', format: 'table', instant: true, range: false },
        { refId: 'B', queryType: 'alarms', endpoint: '' },
        { refId: 'C', queryType: 'inventory', endpoint: 'embed' },
      ],
      filters: [
        { key: EP, operator: '=', value: 'chat' },
        { key: 'gpu', operator: '!=', value: '1' },
      ],
      range,
      app: CoreApp.Dashboard,
      scopedVars: {},
      interval: '1m',
      intervalMs: 60_000,
      maxDataPoints: 100,
      requestId: 'r',
    } as unknown as DataQueryRequest<SageQuery>;
    const response = await firstValueFrom(ds.query(request));
    const sent = fetchMock.mock.calls[0][0].data.queries as SageQuery[];
    expect(sent.map((s) => [s.refId, s.expr, s.endpoint])).toEqual([
      ['A', 'vllm:num_requests_running{"aws.sagemaker.endpoint.name"="chat"}', undefined],
      ['B', undefined, 'chat'],
    ]);
    const notices = Object.fromEntries(
      response.data.map((f: DataFrame) => [f.refId, (f.meta?.notices ?? []).map((n) => n.text)])
    );
    expect(notices).toEqual({
      A: ['Ad-hoc filters ignored by this query:\ngpu != "1": no metric of this query carries gpu'],
      B: [
        'Ad-hoc filters ignored by this query:\ngpu != "1": only endpoint, inference component and region filters narrow this query',
      ],
      C: [
        'No data: the ad-hoc filter aws.sagemaker.endpoint.name = "chat" keeps none of the query\'s endpoints (embed).',
        'Ad-hoc filters ignored by this query:\ngpu != "1": only endpoint, inference component and region filters narrow this query',
      ],
    });
  });
});
