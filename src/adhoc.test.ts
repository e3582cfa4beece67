import { dateTime } from '@grafana/data';

import { applyAdHoc, lookupMatch, RANGE_STEP_MS, TagLookup } from './adhoc';
import { CACHE_TTL_MS, LookupCache } from './lookupCache';
import { ResourceClient } from './resources';
import { fakeResources } from './testing';
import { SageQuery } from './types';

const EP = 'aws.sagemaker.endpoint.name';

describe('lookupMatch', () => {
  it('narrows by the other filters only when one is a non-empty equality', () => {
    expect(lookupMatch([{ key: EP, operator: '!=', value: 'a' }])).toEqual([]);
    expect(lookupMatch([{ key: EP, operator: '=', value: '' }])).toEqual([]);
    expect(
      lookupMatch([
        { key: EP, operator: '=', value: 'a"b' },
        { key: 'gpu', operator: '!=', value: '0' },
      ])
    ).toEqual(['{"aws.sagemaker.endpoint.name"="a\\"b",gpu!="0"}']);
    // The filter being edited does not narrow its own values.
    expect(lookupMatch([{ key: EP, operator: '=', value: 'a' }], EP)).toEqual([]);
  });
});

describe('TagLookup', () => {
  const answers = {
    'api/v1/labels': ['__name__', EP, '@resource.host.id'],
    'api/v1/label/aws.sagemaker.endpoint.name/values': ['chat', 'embed'],
  };
  const range = (from: number, to: number) => ({ from: dateTime(from), to: dateTime(to), raw: { from: '', to: '' } });

  function setup() {
    const fetcher = fakeResources(answers);
    let now = 1_700_000_000_000;
    const tags = new TagLookup(new ResourceClient(fetcher), () => now);
    return { fetcher, tags, advance: (ms: number) => (now += ms) };
  }

  it('lists keys without __name__ and values of a key, in the region asked', async () => {
    const { fetcher, tags } = setup();
    expect((await tags.keys('', [])).map((v) => v.text)).toEqual([EP, '@resource.host.id']);
    expect((await tags.values('eu-west-1', EP, [])).map((v) => v.value)).toEqual(['chat', 'embed']);
    expect(fetcher.calls[1].params.region).toBe('eu-west-1');
  });

  it('asks once for a burst of panels, and again after the TTL', async () => {
    const { fetcher, tags, advance } = setup();
    const t = 1_700_000_000_000;
    // Twenty panels whose ranges differ by a few milliseconds, as each computes "now".
    await Promise.all(Array.from({ length: 20 }, (_, i) => tags.keys('', [], range(t - 3_600_000 + i, t + i))));
    await Promise.all(Array.from({ length: 20 }, () => tags.values('', EP, [], range(t - 3_600_000, t))));
    expect(fetcher.calls.map((c) => c.path)).toEqual([
      'api/v1/labels',
      'api/v1/label/aws.sagemaker.endpoint.name/values',
    ]);
    // The range sent covers the asked one, rounded out to whole steps.
    const { start, end } = fetcher.calls[0].params as { start: string; end: string };
    expect((Number(start) * 1000) % RANGE_STEP_MS).toBe(0);
    expect(Number(end) * 1000).toBeGreaterThanOrEqual(t + 19);
    advance(CACHE_TTL_MS + 1);
    await tags.keys('', [], range(t - 3_600_000, t));
    expect(fetcher.calls).toHaveLength(3);
  });

  it('keys lookups by region and filters', async () => {
    const { fetcher, tags } = setup();
    await tags.keys('', []);
    await tags.keys('us-west-2', []);
    await tags.keys('', [{ key: EP, operator: '=', value: 'chat' }]);
    expect(fetcher.calls.map((c) => c.params['match[]'] ?? c.params.region ?? '')).toEqual([
      '',
      'us-west-2',
      ['{"aws.sagemaker.endpoint.name"="chat"}'],
    ]);
  });
});

describe('LookupCache', () => {
  it('shares a call in flight and forgets a failure', async () => {
    const cache = new LookupCache(() => 0);
    let calls = 0;
    const failing = () => {
      calls++;
      return Promise.reject(new Error('throttled'));
    };
    await expect(Promise.all([cache.get('k', failing), cache.get('k', failing)])).rejects.toThrow('throttled');
    expect(calls).toBe(1);
    await expect(cache.get('k', () => Promise.resolve(7))).resolves.toBe(7);
  });
});

describe('applyAdHoc', () => {
  const promql: SageQuery = {
    refId: 'A',
    expr: 'sum(vllm:num_requests_running) + sum(sum_over_time(Invocations[5m]))',
  };

  it('adds matchers to PromQL and notes the filters no selector takes', () => {
    const out = applyAdHoc(promql, [
      { key: EP, operator: '=', value: 'chat' },
      { key: 'gpu', operator: '=', value: '0' },
      { key: 'x', operator: '<', value: '1' },
    ]);
    expect(out.query.expr).toBe(
      'sum(vllm:num_requests_running{"aws.sagemaker.endpoint.name"="chat"}) + sum(sum_over_time(Invocations[5m]))'
    );
    expect(out.ignored).toEqual([
      'x < "1": PromQL label matchers have no such operator',
      'gpu = "0": no metric of this query carries gpu',
    ]);
    expect(out.empty).toBeUndefined();
  });

  it('names a filter without a label, and a query that does not parse, as the reasons', () => {
    expect(applyAdHoc(promql, [{ key: '', operator: '=', value: 'chat' }]).ignored).toEqual([
      ' = "chat": the filter names no label',
    ]);
    const broken = { refId: 'A', expr: 'sum(vllm:num_requests_running' };
    expect(applyAdHoc(broken, [{ key: EP, operator: '=', value: 'chat' }])).toEqual({
      query: broken,
      ignored: ['aws.sagemaker.endpoint.name = "chat": the query is not valid PromQL; fix it and the filter applies'],
    });
  });

  it('does not call a filter the query already has ignored', () => {
    const out = applyAdHoc({ refId: 'A', expr: 'vllm:num_requests_running{"aws.sagemaker.endpoint.name"="chat"}' }, [
      { key: EP, operator: '=', value: 'chat' },
    ]);
    expect(out).toEqual({
      query: { refId: 'A', expr: 'vllm:num_requests_running{"aws.sagemaker.endpoint.name"="chat"}' },
      ignored: [],
    });
  });

  it.each(['diagnosis', 'alarms', 'alarmHistory', 'inventory'] as const)(
    'narrows the endpoint, component and region of %s',
    (queryType) => {
      const out = applyAdHoc({ refId: 'A', queryType, endpoint: '', inferenceComponent: 'ic-1,ic-2' }, [
        { key: EP, operator: '=|', value: 'chat', values: ['chat', 'embed'] },
        { key: 'InferenceComponentName', operator: '=', value: 'ic-2' },
        { key: '@aws.region', operator: '=', value: 'us-west-2' },
        { key: EP, operator: '!=', value: 'x' },
        { key: 'gpu', operator: '=', value: '0' },
      ]);
      expect([out.query.endpoint, out.query.inferenceComponent, out.query.region]).toEqual([
        'chat,embed',
        'ic-2',
        'us-west-2',
      ]);
      expect(out.ignored).toEqual([
        'aws.sagemaker.endpoint.name != "x": only = and one-of filters narrow this query',
        'gpu = "0": only endpoint, inference component and region filters narrow this query',
      ]);
      expect(out.empty).toBeUndefined();
    }
  );

  it('narrows the endpoint, component, region and account of a cost query', () => {
    const out = applyAdHoc({ refId: 'A', queryType: 'cost', view: 'spend', account: '111122223333,444455556666' }, [
      { key: 'EndpointName', operator: '=', value: 'chat' },
      { key: 'aws.sagemaker.inference_component.name', operator: '=', value: 'ic-1' },
      { key: 'Region', operator: '=', value: 'us-west-2' },
      { key: '@aws.account', operator: '=', value: '444455556666' },
      { key: 'gpu', operator: '=', value: '0' },
    ]);
    expect(out.query).toEqual({
      refId: 'A',
      queryType: 'cost',
      view: 'spend',
      endpoint: 'chat',
      inferenceComponent: 'ic-1',
      region: 'us-west-2',
      account: '444455556666',
    });
    expect(out.ignored).toEqual([
      'gpu = "0": only endpoint, inference component, region and account filters narrow this query',
    ]);
  });

  // The columns of the alarms and inventory frames (endpoint, region, account) are the keys
  // Explore's filter for/out passes, and so a dashboard's ad-hoc filter with such a key narrows
  // every query type with the field.
  it.each([
    ['diagnosis', 'endpoint', 'endpoint'],
    ['alarms', 'region', 'region'],
    ['inventory', 'endpoint', 'endpoint'],
    ['cost', 'account', 'account'],
    ['cost', 'Endpoint', 'endpoint'],
    ['inventory', 'inference_component', 'inferenceComponent'],
    ['changes', 'account', 'account'],
    ['changes', 'aws.sagemaker.inference_component.name', 'inferenceComponent'],
    ['changes', 'endpoint', 'endpoint'],
  ] as const)('narrows %s by a filter on its column %s', (queryType, key, field) => {
    const out = applyAdHoc({ refId: 'A', queryType }, [{ key, operator: '=', value: 'v1' }]);
    expect(out.query[field]).toBe('v1');
    expect(out.ignored).toEqual([]);
  });

  it('leaves an account filter to the query types without an account field', () => {
    const out = applyAdHoc({ refId: 'A', queryType: 'alarms' }, [{ key: '@aws.account', operator: '=', value: '1' }]);
    expect(out.query.account).toBeUndefined();
    expect(out.ignored).toEqual([
      '@aws.account = "1": only endpoint, inference component and region filters narrow this query',
    ]);
  });

  it('says when the filters leave none of the query’s endpoints', () => {
    const out = applyAdHoc({ refId: 'A', queryType: 'alarms', endpoint: 'chat' }, [
      { key: 'EndpointName', operator: '=', value: 'embed' },
    ]);
    expect(out.empty).toBe('EndpointName = "embed" keeps none of the query\'s endpoints (chat)');
  });

  it('leaves queries alone without filters', () => {
    expect(applyAdHoc(promql, undefined)).toEqual({ query: promql, ignored: [] });
  });
});
