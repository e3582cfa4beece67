import { CoreApp, createDataFrame, DataFrame, DataQueryRequest, dateTime, FieldType, ScopedVars } from '@grafana/data';
import { BackendSrv, setBackendSrv } from '@grafana/runtime';
import { firstValueFrom } from 'rxjs';

import { SageAnnotation } from './annotations';
import { escapeForRegex, importQueries, interpolateValue, SageDatasource } from './datasource';
import {
  answerQueries,
  fakeRegionalResources,
  fakeTemplateSrv,
  settings,
  TemplateVariable,
  testDatasource,
} from './testing';
import { DEFAULTS, SageQuery } from './types';
import { SageVariableSupport } from './variableSupport';

const fetchMock = jest.fn();
setBackendSrv({ fetch: fetchMock } as unknown as BackendSrv);

function newDatasource(variables: Record<string, TemplateVariable> = {}) {
  return new SageDatasource(settings, fakeTemplateSrv(variables));
}

const range = { from: dateTime(1_000_000), to: dateTime(4_600_000), raw: { from: 'now-1h', to: 'now' } };

describe('SageDatasource basics', () => {
  it("bounds Grafana's interval by the min step, CloudWatch's minute when unset", () => {
    expect(newDatasource().interval).toBe(DEFAULTS.timeInterval);
    expect(new SageDatasource({ ...settings, jsonData: { timeInterval: '2m' } }, fakeTemplateSrv({})).interval).toBe(
      '2m'
    );
  });

  it('has a one-argument constructor so Grafana does not treat it as Angular', () => {
    expect(SageDatasource.length).toBe(1);
  });

  it('hides hidden and empty queries but keeps diagnosis queries', () => {
    const ds = newDatasource();
    expect(ds.filterQuery({ refId: 'A', expr: ' ' })).toBe(false);
    expect(ds.filterQuery({ refId: 'A', expr: 'up', hide: true })).toBe(false);
    expect(ds.filterQuery({ refId: 'A', expr: 'up' })).toBe(true);
    expect(ds.filterQuery({ refId: 'A', queryType: 'diagnosis', endpoint: 'ep' })).toBe(true);
  });

  it('defaults to a range query, plus instant in Explore', () => {
    const ds = newDatasource();
    expect(ds.getDefaultQuery(CoreApp.Dashboard)).toMatchObject({ range: true, instant: false, format: 'time_series' });
    expect(ds.getDefaultQuery(CoreApp.Explore)).toMatchObject({ range: true, instant: true });
  });
});

describe('template variables', () => {
  it.each([
    ['a.b', 'a\\\\.b'],
    ['x|y(z)', 'x\\\\|y\\\\(z\\\\)'],
    ['back\\slash', 'back\\\\\\\\slash'],
    ['q"uote', 'q\\"uote'],
  ])('escapeForRegex(%s)', (value, escaped) => {
    expect(escapeForRegex(value)).toBe(escaped);
  });

  it('formats single, multi and All values', () => {
    expect(interpolateValue('my.ep', {})).toBe('my.ep');
    expect(interpolateValue('my.ep', { multi: true })).toBe('my\\\\.ep');
    expect(interpolateValue(['a.b'], { multi: true })).toBe('a\\\\.b');
    expect(interpolateValue(['a.b', 'c'], { multi: true })).toBe('(a\\\\.b|c)');
  });

  it('interpolates expr, legend and min step, leaving interval variables to the backend', () => {
    const ds = newDatasource({
      endpoint: { value: ['ep.1', 'ep2'], multi: true },
      ic: { value: 'ic-1' },
      step: { value: '2m' },
    });
    const scopedVars: ScopedVars = {
      __interval: { text: '15s', value: '15s' },
      __rate_interval: { text: '1m', value: '1m' },
      legend: { text: 'x', value: 'ep' },
    };
    const out = ds.applyTemplateVariables(
      {
        refId: 'A',
        expr: 'rate(vllm:generation_tokens_total{"aws.sagemaker.endpoint.name"=~"$endpoint", ic="${ic}"}[$__rate_interval]) * $__interval',
        legendFormat: '{{$legend}} $ic',
        interval: '$step',
      },
      scopedVars
    );
    expect(out.expr).toBe(
      'rate(vllm:generation_tokens_total{"aws.sagemaker.endpoint.name"=~"(ep\\\\.1|ep2)", ic="ic-1"}[$__rate_interval]) * $__interval'
    );
    expect(out.legendFormat).toBe('{{ep}} ic-1');
    expect(out.interval).toBe('2m');
  });

  it('replaces the cost tag key variable as text, not as a regex', () => {
    const ds = newDatasource({ cost_tag: { value: 'Cost.Center "ü"' } });
    const out = ds.applyTemplateVariables({ refId: 'A', queryType: 'cost', view: 'spend', groupByTag: '$cost_tag' }, {});
    expect(out.groupByTag).toBe('Cost.Center "ü"');
    expect(ds.applyTemplateVariables({ refId: 'A', queryType: 'cost' }, {})).not.toHaveProperty('groupByTag');
  });
});

describe('endpoint and IC filters', () => {
  const ds = newDatasource({
    endpoint: { value: ['chat', 'embed'], multi: true },
    one: { value: 'chat' },
    // Grafana hands a variable at All with a custom allValue back as that value, unformatted.
    ic: { value: '.+', multi: true, includeAll: true },
  });

  it.each([
    ['$endpoint', 'chat,embed'],
    ['${endpoint}', 'chat,embed'],
    ['$one', 'chat'],
    ['$ic', ''],
    ['$__all', ''],
    ['All', ''],
    ['a,b', 'a,b'],
    ['', ''],
  ])('%s becomes %j', (text, want) => {
    for (const queryType of ['alarms', 'alarmHistory', 'inventory', 'diagnosis'] as const) {
      const out = ds.applyTemplateVariables({ refId: 'A', queryType, endpoint: text, inferenceComponent: text }, {});
      expect([queryType, out.endpoint, out.inferenceComponent]).toEqual([queryType, want, want]);
    }
  });

  it('names the type and scope in query history', () => {
    expect(ds.getQueryDisplayText({ refId: 'A', queryType: 'alarms', endpoint: 'chat' })).toBe('Alarms: chat');
    expect(ds.getQueryDisplayText({ refId: 'A', queryType: 'alarmHistory' })).toBe('Alarm history: all endpoints');
    expect(ds.getQueryDisplayText({ refId: 'A', queryType: 'inventory', endpoint: 'a', inferenceComponent: 'b' })).toBe(
      'Inventory: a / b'
    );
  });

  it('keeps alarms, alarm history and inventory queries', () => {
    for (const queryType of ['alarms', 'alarmHistory', 'inventory'] as const) {
      expect(ds.filterQuery({ refId: 'A', queryType })).toBe(true);
    }
  });
});

describe('region', () => {
  const ds = newDatasource({
    region: { value: ['us-east-1', 'us-west-2'], multi: true },
    // Grafana hands a variable at All (no custom allValue) over as every value.
    all: { value: ['eu-west-1', 'us-east-1', 'us-west-2'], multi: true, includeAll: true },
    one: { value: 'eu-west-1' },
    glob: { value: '{ap-south-1,eu-west-1}' },
  });

  it.each<[string | undefined, string | undefined]>([
    ['$region', 'us-east-1,us-west-2'],
    ['${region}', 'us-east-1,us-west-2'],
    ['$all', 'eu-west-1,us-east-1,us-west-2'],
    ['$one', 'eu-west-1'],
    ['$glob', 'ap-south-1,eu-west-1'],
    ['$one,us-east-1,$one', 'eu-west-1,us-east-1'],
    [' us-west-2 , ', 'us-west-2'],
    ['', ''],
    [undefined, undefined],
    // Left for the backend to refuse by name ("not an AWS region name").
    ['$missing', '$missing'],
  ])('%p becomes %p for every query type', (region, want) => {
    for (const queryType of ['promql', 'diagnosis', 'alarms', 'alarmHistory', 'inventory'] as const) {
      const out = ds.applyTemplateVariables({ refId: 'A', queryType, expr: 'up', region }, {});
      expect([queryType, out.region]).toEqual([queryType, want]);
    }
  });

  it("lets a repeated panel's scoped value win over the dashboard variable", () => {
    const scopedVars: ScopedVars = { region: { text: 'ap-south-1', value: 'ap-south-1' } };
    expect(ds.applyTemplateVariables({ refId: 'A', region: '$region' }, scopedVars).region).toBe('ap-south-1');
  });

  it('asks discovery about the first region of the query, interpolated; empty = the default region', () => {
    expect(ds.firstRegion({ refId: 'A', region: '$region' })).toBe('us-east-1');
    expect(ds.firstRegion({ refId: 'A', region: '$all' })).toBe('eu-west-1');
    expect(ds.firstRegion({ refId: 'A', region: ' , us-west-2' })).toBe('us-west-2');
    expect(ds.firstRegion({ refId: 'A' })).toBe('');
  });

  it('offers the dashboard variables as $name', () => {
    expect(ds.variableOptions()).toEqual(['$region', '$all', '$one', '$glob']);
  });
});

describe('Explore helpers', () => {
  it('interpolates queries sent to Explore and points them at this datasource', () => {
    const ds = newDatasource({ ep: { value: 'a' } });
    const [q] = ds.interpolateVariablesInQueries([{ refId: 'A', expr: 'up{e="$ep"}[$__interval]' }], {});
    expect(q.expr).toBe('up{e="a"}[$__interval]');
    expect(q.datasource).toEqual({ uid: 'sm', type: 'inferscope-sagemaker-datasource' });
  });

  it('shows the PromQL or the diagnosis target in query history', () => {
    const ds = newDatasource();
    expect(ds.getQueryDisplayText({ refId: 'A', expr: 'sum(up)' })).toBe('sum(up)');
    expect(
      ds.getQueryDisplayText({ refId: 'A', queryType: 'diagnosis', endpoint: 'ep', inferenceComponent: 'ic' })
    ).toBe('Diagnosis: ep / ic');
  });
});

describe('importQueries', () => {
  const promQuery = {
    refId: 'A',
    expr: 'sum(up)',
    legendFormat: '{{job}}',
    interval: '1m',
    instant: true,
    range: false,
    format: 'table',
    exemplar: true,
  };

  it.each(['prometheus', 'grafana-amazonprometheus-datasource'])('keeps the PromQL from %s', (id) => {
    const [q] = importQueries([promQuery], id);
    expect(q).toEqual({
      refId: 'A',
      expr: 'sum(up)',
      legendFormat: '{{job}}',
      interval: '1m',
      instant: true,
      range: false,
      format: 'table',
      editorMode: 'code',
      hide: undefined,
      intervalFactor: undefined,
    });
  });

  it('starts empty from other datasource types', () => {
    const [q] = importQueries([{ refId: 'B', expr: 'count_over_time({job="x"}[1m])' } as SageQuery], 'loki');
    expect(q).toMatchObject({ refId: 'B', expr: '' });
  });
});

describe('metricFindQuery', () => {
  it('interpolates the selector and asks the label-values resource', async () => {
    const ds = newDatasource({ endpoint: { value: ['ep.1', 'ep2'], multi: true } });
    const getResource = jest.spyOn(ds, 'getResource').mockResolvedValue({ status: 'success', data: ['i-1', 'i-2'] });
    const values = await ds.metricFindQuery(
      'label_values(DCGM_FI_DEV_GPU_UTIL{"aws.sagemaker.endpoint.name"=~"$endpoint"}, "@resource.host.id")',
      { range }
    );
    expect(values).toEqual([{ text: 'i-1' }, { text: 'i-2' }]);
    expect(getResource).toHaveBeenCalledWith('api/v1/label/%40resource.host.id/values', {
      start: '1000',
      end: '4600',
      limit: 10000,
      'match[]': ['DCGM_FI_DEV_GPU_UTIL{"aws.sagemaker.endpoint.name"=~"(ep\\\\.1|ep2)"}'],
    });
  });

  it('lists regions() from the regions resource, without a region parameter', async () => {
    const ds = newDatasource();
    const getResource = jest.spyOn(ds, 'getResource').mockResolvedValue(['us-east-1', 'us-west-2']);
    const values = await ds.metricFindQuery({ refId: 'v', qryType: 'regions', query: 'regions()' }, { range });
    expect(values).toEqual([{ text: 'us-east-1' }, { text: 'us-west-2' }]);
    expect(getResource).toHaveBeenCalledWith('regions');
  });

  it('fills the range variables in query_result', async () => {
    const ds = newDatasource();
    const getResource = jest
      .spyOn(ds, 'getResource')
      .mockResolvedValue({ status: 'success', data: { resultType: 'scalar', result: [4600, '7'] } });
    const values = await ds.metricFindQuery('query_result(max_over_time(up[$__range]) * ${__range_s} / $__range_ms)', {
      range,
    });
    expect(values).toEqual([{ text: '7' }]);
    expect(getResource).toHaveBeenCalledWith('api/v1/query', {
      query: 'max_over_time(up[3600s]) * 3600 / 3600000',
      time: '4600',
    });
  });

  it.each([
    ['endpoints()', 'inventory/endpoints', {}],
    ['inference_components($endpoint)', 'inventory/components', { endpoint: 'ep.1,ep2' }],
    ['inference_components($all)', 'inventory/components', {}],
  ])('lists %s from the inventory, names joined by ","', async (query, path, params) => {
    const ds = newDatasource({ endpoint: { value: ['ep.1', 'ep2'], multi: true }, all: { value: '.+', multi: true } });
    const getResource = jest.spyOn(ds, 'getResource').mockResolvedValue({ values: ['chat-llama', 'chat-qwen'] });
    const values = await ds.metricFindQuery(query, { range });
    expect(values).toEqual([{ text: 'chat-llama' }, { text: 'chat-qwen' }]);
    expect(getResource).toHaveBeenCalledWith(path, params);
  });

  it("resolves aws_console() from the data source's region", async () => {
    const ds = new SageDatasource({ ...settings, jsonData: { defaultRegion: 'us-gov-east-1' } }, fakeTemplateSrv({}));
    const getResource = jest.spyOn(ds, 'getResource');
    expect(await ds.metricFindQuery('aws_console()', { range })).toEqual([
      { text: 'https://us-gov-east-1.console.amazonaws-us-gov.com' },
    ]);
    expect(getResource).not.toHaveBeenCalled();
  });

  it('resolves variable support requests the same way', async () => {
    const ds = newDatasource();
    jest.spyOn(ds, 'getResource').mockResolvedValue({ status: 'success', data: ['a', 'b'] });
    const request = {
      targets: [{ refId: 'v', query: 'label_names()' }],
      range,
      scopedVars: {},
    } as unknown as DataQueryRequest;
    const response = await firstValueFrom((ds.variables as SageVariableSupport).query(request as never));
    expect(response.data).toEqual([{ text: 'a' }, { text: 'b' }]);
  });
});

describe("metricFindQuery in the variable query's regions", () => {
  const PATH = 'api/v1/label/aws.sagemaker.endpoint.name/values';
  const QUERY = 'label_values(node_memory_MemTotal_bytes, "aws.sagemaker.endpoint.name")';
  const answers = {
    '': { [PATH]: ['home-b', 'home-a'] },
    'us-east-1': { [PATH]: ['chat', 'east'] },
    'us-west-2': { [PATH]: ['chat', 'west'] },
    'eu-west-1': { [PATH]: ['eu'] },
  };
  const variables: Record<string, TemplateVariable> = {
    multi: { value: ['us-east-1', 'us-west-2'], multi: true },
    // Grafana hands a variable at All (no custom allValue) over as every value.
    all: { value: ['eu-west-1', 'us-east-1', 'us-west-2'], multi: true, includeAll: true },
    single: { value: 'us-west-2' },
    empty: { value: '' },
  };

  it.each<[string | undefined, Array<string | undefined>, string[]]>([
    ['$multi', ['us-east-1', 'us-west-2'], ['chat', 'east', 'west']],
    ['${all}', ['eu-west-1', 'us-east-1', 'us-west-2'], ['chat', 'east', 'eu', 'west']],
    ['$single', ['us-west-2'], ['chat', 'west']],
    ['$single, us-west-2 ,$multi', ['us-west-2', 'us-east-1'], ['chat', 'east', 'west']],
    ['$empty', [undefined], ['home-b', 'home-a']],
    ['', [undefined], ['home-b', 'home-a']],
    [undefined, [undefined], ['home-b', 'home-a']],
  ])('region %p asks %p once each and merges', async (region, asked, want) => {
    const fetcher = fakeRegionalResources(answers);
    const ds = testDatasource(fetcher, variables);
    const values = await ds.metricFindQuery({ refId: 'v', query: QUERY, region }, { range });
    expect(values.map((v) => v.text)).toEqual(want);
    expect(fetcher.calls.map((c) => c.params.region)).toEqual(asked);
    expect(fetcher.calls.every((c) => c.path === PATH)).toBe(true);
  });

  it("lets a repeated row's scoped region win over the dashboard variable", async () => {
    const fetcher = fakeRegionalResources(answers);
    const ds = testDatasource(fetcher, variables);
    const scopedVars: ScopedVars = { multi: { text: 'eu-west-1', value: 'eu-west-1' } };
    expect(await ds.metricFindQuery({ refId: 'v', query: QUERY, region: '$multi' }, { range, scopedVars })).toEqual([
      { text: 'eu' },
    ]);
    expect(fetcher.calls.map((c) => c.params.region)).toEqual(['eu-west-1']);
  });

  it("fails the variable with the failed region's name and the backend's reason", async () => {
    const fetcher = fakeRegionalResources(answers, {
      'us-west-2': 'parameter region: region "us-west-2" is not allowed by this data source',
    });
    const ds = testDatasource(fetcher, variables);
    await expect(ds.metricFindQuery({ refId: 'v', query: QUERY, region: '$multi' }, { range })).rejects.toThrow(
      'region us-west-2: parameter region: region "us-west-2" is not allowed by this data source'
    );
  });

  it('resolves the stored object form through the variable support with its region', async () => {
    const fetcher = fakeRegionalResources({
      'us-east-1': { 'inventory/endpoints': ['b', 'shared'] },
      'us-west-2': { 'inventory/endpoints': ['a', 'shared'] },
    });
    const ds = testDatasource(fetcher, variables);
    const request = {
      targets: [{ refId: 'v', query: 'endpoints()', region: '$multi' }],
      range,
      scopedVars: {},
    } as unknown as DataQueryRequest;
    const response = await firstValueFrom((ds.variables as SageVariableSupport).query(request as never));
    expect(response.data).toEqual([{ text: 'a' }, { text: 'b' }, { text: 'shared' }]);
    expect(fetcher.calls).toEqual([
      { path: 'inventory/endpoints', params: { region: 'us-east-1' } },
      { path: 'inventory/endpoints', params: { region: 'us-west-2' } },
    ]);
  });
});

function backendFrame(refId: string, labels: Record<string, string>, values: number[]): DataFrame {
  return createDataFrame({
    refId,
    fields: [
      { name: 'Time', type: FieldType.time, values: values.map((_, i) => (i + 1) * 1000) },
      { name: 'Value', type: FieldType.number, values, labels },
    ],
  });
}

describe('query', () => {
  beforeEach(() => fetchMock.mockReset());

  const respond = (frames: DataFrame[]) => answerQueries(fetchMock, frames);

  const request = (targets: SageQuery[], app = CoreApp.Dashboard) =>
    ({
      targets,
      range,
      app,
      scopedVars: {},
      interval: '15s',
      intervalMs: 15000,
      maxDataPoints: 100,
      requestId: 'r',
    }) as unknown as DataQueryRequest<SageQuery>;

  it('splits Both into a range and an -Instant query and formats tables in the browser', async () => {
    respond([backendFrame('A', { job: 'x' }, [1, 2]), backendFrame('A-Instant', { job: 'x' }, [3])]);
    const ds = newDatasource();
    const response = await firstValueFrom(
      ds.query(request([{ refId: 'A', expr: 'up', range: true, instant: true, format: 'table' }]))
    );
    const sent = fetchMock.mock.calls[0][0].data.queries as SageQuery[];
    expect(sent.map((q) => [q.refId, q.range, q.instant])).toEqual([
      ['A', true, false],
      ['A-Instant', false, true],
    ]);
    // Two table-format targets after the split: value columns carry their refIds.
    expect(response.data.map((f: DataFrame) => f.fields.map((x) => x.name))).toEqual([
      ['Time', 'job', 'Value #A'],
      ['Time', 'job', 'Value #A'],
    ]);
  });

  it('sends alarms queries with their filters and options, and leaves their frames alone', async () => {
    const alarms = createDataFrame({
      refId: 'A',
      name: 'alarms',
      fields: [
        { name: 'resource', type: FieldType.string, values: ['chat'] },
        { name: 'severity', type: FieldType.number, values: [3] },
      ],
    });
    respond([alarms]);
    const ds = newDatasource({ endpoint: { value: ['chat', 'embed'], multi: true } });
    const response = await firstValueFrom(
      ds.query(
        request([
          {
            refId: 'A',
            queryType: 'alarms',
            endpoint: '$endpoint',
            inferenceComponent: '$__all',
            thresholdFallback: true,
          },
          { refId: 'B', queryType: 'inventory', endpoint: 'chat', format: 'annotations' },
        ])
      )
    );
    const sent = fetchMock.mock.calls[0][0].data.queries as SageQuery[];
    expect(
      sent.map((q) => [q.refId, q.queryType, q.endpoint, q.inferenceComponent, q.thresholdFallback, q.format])
    ).toEqual([
      ['A', 'alarms', 'chat,embed', '', true, undefined],
      ['B', 'inventory', 'chat', undefined, undefined, 'annotations'],
    ]);
    expect(response.data[0].fields.map((f: { name: string }) => f.name)).toEqual(['resource', 'severity']);
  });

  it('sends each query its interpolated region', async () => {
    respond([]);
    const ds = newDatasource({ region: { value: ['us-east-1', 'us-west-2'], multi: true } });
    await firstValueFrom(
      ds.query(
        request([
          { refId: 'A', expr: 'up', range: true, instant: true, region: '$region' },
          { refId: 'B', queryType: 'diagnosis', region: 'eu-west-1' },
          { refId: 'C', expr: 'up', range: true },
        ])
      )
    );
    const sent = fetchMock.mock.calls[0][0].data.queries as SageQuery[];
    expect(sent.map((q) => [q.refId, q.region])).toEqual([
      ['A', 'us-east-1,us-west-2'],
      ['A-Instant', 'us-east-1,us-west-2'],
      ['B', 'eu-west-1'],
      ['C', undefined],
    ]);
  });

  it('keeps time series frames as the backend sent them', async () => {
    respond([backendFrame('A', { job: 'x' }, [1, 2])]);
    const response = await firstValueFrom(newDatasource().query(request([{ refId: 'A', expr: 'up', range: true }])));
    expect(response.data).toHaveLength(1);
    expect(response.data[0].fields[1].labels).toEqual({ job: 'x' });
  });
});

describe('annotations', () => {
  it('prepares a range target and turns positive samples into events', async () => {
    const ds = newDatasource();
    const prepared = ds.annotations!.prepareAnnotation!({
      name: 'scale',
      enable: true,
      iconColor: 'red',
      expr: 'e2e_duration',
      titleFormat: 'scaled {{ep}}',
    } as SageAnnotation) as SageAnnotation;
    expect(prepared.target).toMatchObject({ expr: 'e2e_duration', range: true, instant: false });
    const events = await firstValueFrom(
      ds.annotations!.processEvents!(prepared, [backendFrame('Anno', { ep: 'a' }, [0, 4])])!
    );
    expect(events).toEqual([{ time: 2000, timeEnd: 2000, isRegion: false, title: 'scaled a', text: '', tags: [] }]);
  });
});

describe('alarm history and inventory annotations', () => {
  it.each(['alarmHistory', 'inventory'] as const)(
    '%s: keeps the target and turns framed rows into events',
    async (queryType) => {
      const ds = newDatasource();
      const prepared = ds.annotations!.prepareAnnotation!({
        name: 'events',
        enable: true,
        iconColor: 'red',
        target: { refId: '', queryType, endpoint: '$endpoint' },
      } as SageAnnotation) as SageAnnotation;
      expect(prepared.target).toEqual({ refId: 'Anno', queryType, endpoint: '$endpoint', format: 'annotations' });
      const frame = createDataFrame({
        refId: 'Anno',
        fields: [
          { name: 'time', type: FieldType.time, values: [5000, 2000] },
          { name: 'title', type: FieldType.string, values: ['kv-cache-chat: OK → ALARM', 'endpoint chat updated'] },
          { name: 'text', type: FieldType.string, values: ['Threshold crossed', ''] },
          { name: 'tags', type: FieldType.string, values: ['kv-cache-chat, ALARM,chat,', ''] },
        ],
      });
      const events = await firstValueFrom(ds.annotations!.processEvents!(prepared, [frame])!);
      expect(events).toEqual([
        { time: 2000, title: 'endpoint chat updated', text: '', tags: [] },
        {
          time: 5000,
          title: 'kv-cache-chat: OK → ALARM',
          text: 'Threshold crossed',
          tags: ['kv-cache-chat', 'ALARM', 'chat'],
        },
      ]);
    }
  );
});
