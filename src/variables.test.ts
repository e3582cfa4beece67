import { dateTime } from '@grafana/data';

import { ResourceClient } from './resources';
import { PROMQL_REGIONS } from './regions';
import { fakeRegionalResources, fakeResources, mulberry32 } from './testing';
import {
  consoleOrigin,
  formatVariableQuery,
  isInventoryVariableQuery,
  parseVariableQuery,
  resolveVariableQuery,
  toVariableQuery,
} from './variables';

describe('parseVariableQuery', () => {
  it.each([
    ['label_names()', { kind: 'label_names' }],
    ['label_names(vllm:num_requests_running)', { kind: 'label_names', match: 'vllm:num_requests_running' }],
    ['label_values(EndpointName)', { kind: 'label_values', label: 'EndpointName' }],
    ['label_values("aws.sagemaker.endpoint.name")', { kind: 'label_values', label: 'aws.sagemaker.endpoint.name' }],
    [
      'label_values(DCGM_FI_DEV_GPU_UTIL, "aws.sagemaker.endpoint.name")',
      { kind: 'label_values', label: 'aws.sagemaker.endpoint.name', match: 'DCGM_FI_DEV_GPU_UTIL' },
    ],
    [
      'label_values(vllm:num_requests_running{"aws.sagemaker.endpoint.name"=~"a,b", x="1"}, \'@resource.host.id\')',
      {
        kind: 'label_values',
        label: '@resource.host.id',
        match: 'vllm:num_requests_running{"aws.sagemaker.endpoint.name"=~"a,b", x="1"}',
      },
    ],
    ['metrics(vllm:.*)', { kind: 'metrics', regex: 'vllm:.*' }],
    ['query_result(topk(5, sum by (a, b) (up)))', { kind: 'query_result', expr: 'topk(5, sum by (a, b) (up))' }],
  ])('%s', (text, parsed) => {
    expect(parseVariableQuery(text)).toEqual(parsed);
  });

  it.each([
    ['up', /Unsupported variable query "up": use label_names/],
    ['label_values()', /needs a label name/],
    ['query_result()', /needs a PromQL expression/],
  ])('rejects %s with a message naming the fix', (text, message) => {
    expect(() => parseVariableQuery(text)).toThrow(message);
  });

  it('formats what it parses', () => {
    for (const text of [
      'label_names()',
      'label_values(DCGM_FI_DEV_GPU_UTIL, "aws.sagemaker.endpoint.name")',
      'label_values(EndpointName)',
      'metrics(vllm:.*)',
      'query_result(up)',
    ]) {
      expect(formatVariableQuery(parseVariableQuery(text))).toBe(text);
    }
  });

  it('accepts stored strings and objects', () => {
    expect(toVariableQuery('label_names()')).toEqual({ refId: 'variable', query: 'label_names()' });
    expect(toVariableQuery({ refId: 'X', query: 'metrics(a)', qryType: 'metrics' })).toEqual({
      refId: 'X',
      query: 'metrics(a)',
      qryType: 'metrics',
    });
  });
});

describe('resolveVariableQuery', () => {
  const range = { from: dateTime(10_000), to: dateTime(70_000), raw: { from: 'a', to: 'b' } };
  const answers = {
    'api/v1/labels': ['aws.sagemaker.endpoint.name', 'EndpointName'],
    'api/v1/label/aws.sagemaker.endpoint.name/values': ['ep-a', 'ep-b', 'ep-a'],
    'api/v1/label/__name__/values': ['vllm:num_requests_running', 'vllm:kv_cache_usage_perc', 'DCGM_FI_DEV_GPU_UTIL'],
    'api/v1/query': {
      resultType: 'vector',
      result: [{ metric: { __name__: 'up', 'aws.sagemaker.endpoint.name': 'ep' }, value: [1700000000, '3'] }],
    },
  };

  it.each([
    [
      'label_names()',
      'api/v1/labels',
      { start: '10', end: '70', limit: 10000 },
      ['aws.sagemaker.endpoint.name', 'EndpointName'],
    ],
    [
      'label_values(DCGM_FI_DEV_GPU_UTIL{"aws.sagemaker.variant.name"="v"}, "aws.sagemaker.endpoint.name")',
      'api/v1/label/aws.sagemaker.endpoint.name/values',
      {
        start: '10',
        end: '70',
        limit: 10000,
        'match[]': ['DCGM_FI_DEV_GPU_UTIL{"aws.sagemaker.variant.name"="v"}'],
      },
      ['ep-a', 'ep-b'],
    ],
    [
      'metrics(vllm:.*)',
      'api/v1/label/__name__/values',
      { start: '10', end: '70', limit: 10000 },
      ['vllm:num_requests_running', 'vllm:kv_cache_usage_perc'],
    ],
    [
      'query_result(up)',
      'api/v1/query',
      { query: 'up', time: '70' },
      ['up{aws.sagemaker.endpoint.name="ep"} 3 1700000000000'],
    ],
  ])('%s calls %s', async (text, path, params, values) => {
    const fetcher = fakeResources(answers);
    const result = await resolveVariableQuery(text, new ResourceClient(fetcher), range);
    expect(fetcher.calls).toEqual([{ path, params }]);
    expect(result.map((v) => v.text)).toEqual(values);
  });

  it('filters metrics by a full-name regex in the browser (CloudWatch refuses __name__=~)', async () => {
    const fetcher = fakeResources(answers);
    const result = await resolveVariableQuery('metrics(DCGM)', new ResourceClient(fetcher), range);
    expect(result).toEqual([]);
    expect(fetcher.calls[0].params['match[]']).toBeUndefined();
  });

  it('reports an invalid metrics regex', async () => {
    await expect(resolveVariableQuery('metrics(vllm[)', new ResourceClient(fakeResources(answers)))).rejects.toThrow(
      /metrics\(vllm\[\): invalid regular expression/
    );
  });

  it('reports API errors with the path', async () => {
    const fetcher = {
      getResource: <T>() => Promise.resolve({ status: 'error', error: 'throttled' } as T),
    };
    await expect(resolveVariableQuery('label_names()', new ResourceClient(fetcher))).rejects.toThrow(
      'api/v1/labels: throttled'
    );
  });
});

describe('inventory variable queries', () => {
  it.each([
    ['endpoints()', { kind: 'endpoints' }],
    [' endpoints ( ) ', { kind: 'endpoints' }],
    ['inference_components()', { kind: 'inference_components' }],
    ['inference_components($endpoint)', { kind: 'inference_components', endpoint: '$endpoint' }],
    ['inference_components( chat , embed )', { kind: 'inference_components', endpoint: 'chat , embed' }],
  ])('parses %s', (text, parsed) => {
    expect(isInventoryVariableQuery(text)).toBe(true);
    expect(parseVariableQuery(text)).toEqual(parsed);
  });

  it('formats what it parses', () => {
    for (const text of [
      'endpoints()',
      'inference_components()',
      'inference_components($endpoint)',
      'inference_components(a,b)',
    ]) {
      expect(formatVariableQuery(parseVariableQuery(text))).toBe(text);
    }
  });

  it('round-trips generated queries', () => {
    // Names drawn with a fixed seed from SageMaker's alphabet, joined as a multi-value variable is.
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
    const name = () => {
      let s = alphabet[rand(alphabet.length)];
      for (let i = rand(20); i > 0; i--) {
        s += rand(5) === 0 ? '-' + alphabet[rand(alphabet.length)] : alphabet[rand(alphabet.length)];
      }
      return s;
    };
    for (let i = 0; i < 200; i++) {
      const endpoint = Array.from({ length: 1 + rand(3) }, name).join(',');
      const parsed = { kind: 'inference_components' as const, endpoint };
      expect(parseVariableQuery(formatVariableQuery(parsed))).toEqual(parsed);
    }
  });

  it('refuses an argument to endpoints() and says what to use instead', () => {
    expect(() => parseVariableQuery('endpoints(chat)')).toThrow('use inference_components(chat)');
  });

  it('is not mistaken for PromQL and PromQL not for it', () => {
    expect(isInventoryVariableQuery('label_values(endpoints, x)')).toBe(false);
    expect(isInventoryVariableQuery('query_result(inference_components(up))')).toBe(false);
  });

  it.each([
    ['endpoints()', 'inventory/endpoints', {}],
    ['inference_components()', 'inventory/components', {}],
    ['inference_components(chat)', 'inventory/components', { endpoint: 'chat' }],
    ['inference_components(chat,embed)', 'inventory/components', { endpoint: 'chat,embed' }],
    // A variable at All, with the dashboards' allValue or by name: every IC.
    ['inference_components(.+)', 'inventory/components', {}],
    ['inference_components($__all)', 'inventory/components', {}],
  ])('%s calls %s %j', async (text, path, params) => {
    const fetcher = fakeResources({ [path]: ['b', 'a', 'b'] });
    const values = await resolveVariableQuery(text, new ResourceClient(fetcher));
    expect(fetcher.calls).toEqual([{ path, params }]);
    expect(values.map((v) => v.text)).toEqual(['b', 'a']);
  });

  it('reports a response of the wrong shape with the path', async () => {
    const fetcher = { getResource: <T>() => Promise.resolve({ status: 'success', data: ['x'] } as T) };
    await expect(resolveVariableQuery('endpoints()', new ResourceClient(fetcher))).rejects.toThrow(
      'inventory/endpoints: unexpected response shape'
    );
  });
});

describe("the data source's region and console", () => {
  it.each([
    ['us-east-1', 'https://us-east-1.console.aws.amazon.com'],
    ['eu-central-2', 'https://eu-central-2.console.aws.amazon.com'],
    ['cn-north-1', 'https://cn-north-1.console.amazonaws.cn'],
    ['cn-northwest-1', 'https://cn-northwest-1.console.amazonaws.cn'],
    ['us-gov-west-1', 'https://us-gov-west-1.console.amazonaws-us-gov.com'],
  ])('%s: console at %s', (region, origin) => {
    expect(consoleOrigin(region)).toBe(origin);
  });

  it.each(['aws_region()', 'aws_console()', ' aws_console ( ) '])('parses and formats %s', (text) => {
    const parsed = parseVariableQuery(text);
    expect(formatVariableQuery(parsed)).toBe(text.replace(/\s/g, ''));
  });

  it('answers from the region, without a resource call', async () => {
    const fetcher = fakeResources({});
    const resources = new ResourceClient(fetcher);
    expect(await resolveVariableQuery('aws_region()', resources, undefined, 'cn-north-1')).toEqual([
      { text: 'cn-north-1' },
    ]);
    expect(await resolveVariableQuery('aws_console()', resources, undefined, 'cn-north-1')).toEqual([
      { text: 'https://cn-north-1.console.amazonaws.cn' },
    ]);
    expect(fetcher.calls).toEqual([]);
  });

  it('says where to set a missing region', async () => {
    await expect(resolveVariableQuery('aws_console()', new ResourceClient(fakeResources({})))).rejects.toThrow(
      'set it in the data source settings'
    );
  });

  it('takes no argument', () => {
    expect(() => parseVariableQuery('aws_region(us-east-1)')).toThrow(/Unsupported variable query/);
  });
});

describe('regions()', () => {
  it.each(['regions()', ' regions ( ) '])('parses and formats %p', (text) => {
    expect(parseVariableQuery(text)).toEqual({ kind: 'regions' });
    expect(formatVariableQuery(parseVariableQuery(text))).toBe('regions()');
  });

  it('is not read as the inventory or PromQL forms', () => {
    expect(isInventoryVariableQuery('regions()')).toBe(false);
    expect(parseVariableQuery('label_values(regions)')).toEqual({ kind: 'label_values', label: 'regions' });
  });

  it('refuses an argument, naming the accepted forms', () => {
    expect(() => parseVariableQuery('regions(us-east-1)')).toThrow(/Unsupported variable query.*regions\(\)/);
  });

  it('lists the regions resource, once per distinct region', async () => {
    const fetcher = fakeResources({ regions: ['eu-west-1', 'us-east-1', 'eu-west-1'] });
    const values = await resolveVariableQuery('regions()', new ResourceClient(fetcher), undefined, 'us-east-1');
    expect(values).toEqual([{ text: 'eu-west-1' }, { text: 'us-east-1' }]);
    expect(fetcher.calls).toEqual([{ path: 'regions', params: {} }]);
  });
});

describe('variable queries in several regions', () => {
  const range = { from: dateTime(10_000), to: dateTime(70_000), raw: { from: 'a', to: 'b' } };
  const EAST = 'us-east-1';
  const WEST = 'us-west-2';
  const byRegion = {
    [EAST]: {
      'api/v1/labels': ['common', 'east_only'],
      'api/v1/label/aws.sagemaker.endpoint.name/values': ['chat-east', 'shared'],
      'api/v1/label/__name__/values': ['up', 'vllm:a'],
      'api/v1/query': { resultType: 'vector', result: [{ metric: { __name__: 'up', e: '1' }, value: [1, '1'] }] },
      'inventory/endpoints': ['ep-east', 'shared'],
      'inventory/components': ['ic-east'],
    },
    [WEST]: {
      'api/v1/labels': ['a_west', 'common'],
      'api/v1/label/aws.sagemaker.endpoint.name/values': ['api-west', 'shared'],
      'api/v1/label/__name__/values': ['up', 'vllm:b'],
      'api/v1/query': { resultType: 'vector', result: [{ metric: { __name__: 'up', e: '2' }, value: [1, '2'] }] },
      'inventory/endpoints': ['ap-west', 'shared'],
      'inventory/components': ['ic-west'],
    },
  };

  it.each<[string, string, Record<string, unknown>, string[]]>([
    ['label_names()', 'api/v1/labels', {}, ['a_west', 'common', 'east_only']],
    [
      'label_values("aws.sagemaker.endpoint.name")',
      'api/v1/label/aws.sagemaker.endpoint.name/values',
      {},
      ['api-west', 'chat-east', 'shared'],
    ],
    ['metrics(vllm:.*)', 'api/v1/label/__name__/values', {}, ['vllm:a', 'vllm:b']],
    // Samples keep the order of the regions named, not sorted.
    ['query_result(up)', 'api/v1/query', {}, ['up{e="1"} 1 1000', 'up{e="2"} 2 1000']],
    ['endpoints()', 'inventory/endpoints', {}, ['ap-west', 'ep-east', 'shared']],
    ['inference_components(chat)', 'inventory/components', { endpoint: 'chat' }, ['ic-east', 'ic-west']],
  ])('%s asks %s once in each region and merges the answers', async (text, path, params, want) => {
    const fetcher = fakeRegionalResources(byRegion);
    const result = await resolveVariableQuery(text, new ResourceClient(fetcher), range, EAST, [EAST, WEST]);
    expect(result.map((v) => v.text)).toEqual(want);
    expect(fetcher.calls.map((c) => c.path)).toEqual([path, path]);
    expect(fetcher.calls.map((c) => c.params.region).sort()).toEqual([EAST, WEST]);
    for (const call of fetcher.calls) {
      expect(call.params).toMatchObject(params);
    }
  });

  it("asks one named region once and keeps its answer's order", async () => {
    const fetcher = fakeRegionalResources({ [WEST]: { 'api/v1/labels': ['z', 'a', 'z'] } });
    const result = await resolveVariableQuery('label_names()', new ResourceClient(fetcher), range, EAST, [WEST]);
    expect(result.map((v) => v.text)).toEqual(['z', 'a']);
    expect(fetcher.calls).toEqual([
      { path: 'api/v1/labels', params: { start: '10', end: '70', limit: 10000, region: WEST } },
    ]);
  });

  it('asks the default region, without a region parameter, when none is named', async () => {
    const fetcher = fakeRegionalResources({ '': { 'inventory/endpoints': ['b', 'a'] } });
    const result = await resolveVariableQuery('endpoints()', new ResourceClient(fetcher), range, EAST, []);
    expect(result.map((v) => v.text)).toEqual(['b', 'a']);
    expect(fetcher.calls).toEqual([{ path: 'inventory/endpoints', params: {} }]);
  });

  it.each([
    [{ [WEST]: 'AccessDenied: not authorized to perform sagemaker:ListEndpoints' }, `region ${WEST}: AccessDenied`],
    // The backend already names the region when asked about several: not named twice.
    [{ [WEST]: `region ${WEST}: throttled` }, `^region ${WEST}: throttled$`],
    [{ [EAST]: 'timeout', [WEST]: 'throttled' }, `^region ${EAST}: timeout; region ${WEST}: throttled$`],
  ])('fails the variable naming each failed region (%p)', async (failing, want) => {
    const fetcher = fakeRegionalResources(byRegion, failing);
    await expect(
      resolveVariableQuery('endpoints()', new ResourceClient(fetcher), range, EAST, [EAST, WEST])
    ).rejects.toThrow(new RegExp(want));
    // Every region was asked once, the failing ones too.
    expect(fetcher.calls.map((c) => c.params.region).sort()).toEqual([EAST, WEST]);
  });

  it("names the region of a client-side failure (the backend's envelope says error)", async () => {
    const fetcher = fakeRegionalResources({ ...byRegion, 'eu-west-1': {} });
    await expect(
      resolveVariableQuery('label_names()', new ResourceClient(fetcher), range, EAST, [EAST, 'eu-west-1'])
    ).rejects.toThrow('region eu-west-1: unexpected resource call api/v1/labels');
  });

  it('ignores the regions for regions(), aws_region() and aws_console()', async () => {
    const fetcher = fakeRegionalResources({ '': { regions: [EAST, WEST] } });
    const client = new ResourceClient(fetcher);
    expect((await resolveVariableQuery('regions()', client, range, EAST, [WEST])).map((v) => v.text)).toEqual([
      EAST,
      WEST,
    ]);
    expect(await resolveVariableQuery('aws_region()', client, range, EAST, [WEST])).toEqual([{ text: EAST }]);
    expect(await resolveVariableQuery('aws_console()', client, range, EAST, [WEST])).toEqual([
      { text: consoleOrigin(EAST) },
    ]);
    expect(fetcher.calls).toEqual([{ path: 'regions', params: {} }]);
  });

  it('merges random answers of random regions into their sorted union, one call per region (seeded)', async () => {
    const random = mulberry32(15);
    const pool = ['ep-a', 'ep-b', 'chat', 'chat-2', 'Zeta', 'alpha', 'ep.1', 'ep_1', 'ü-ep', '0ep'];
    const pickSome = <T>(items: T[], max: number) => items.filter(() => random() < max / items.length);
    for (let run = 0; run < 100; run++) {
      const regions = pickSome(PROMQL_REGIONS, 3).slice(0, 4);
      if (regions.length === 0) {
        regions.push(PROMQL_REGIONS[run % PROMQL_REGIONS.length]);
      }
      const answers = Object.fromEntries(regions.map((r) => [r, { 'inventory/endpoints': pickSome(pool, 4).sort() }]));
      const fetcher = fakeRegionalResources(answers);
      const result = await resolveVariableQuery('endpoints()', new ResourceClient(fetcher), range, EAST, regions);
      const lists = regions.map((r) => answers[r]['inventory/endpoints']);
      const want = regions.length === 1 ? lists[0] : Array.from(new Set(lists.flat())).sort();
      expect([run, result.map((v) => v.text)]).toEqual([run, want]);
      expect(fetcher.calls.map((c) => c.params.region)).toEqual(regions);
    }
  });
});
