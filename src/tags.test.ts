import { CoreApp, createDataFrame, DataFrame, DataQueryRequest, dateTime, FieldType } from '@grafana/data';
import { BackendSrv, setBackendSrv } from '@grafana/runtime';
import { firstValueFrom } from 'rxjs';

import { applyAdHoc } from './adhoc';
import { hasMatcher } from './promql/filters';
import { unquoteString } from './promql/names';
import { ResourceClient } from './resources';
import { ENDPOINT_LABEL, Resolution, TagResolver } from './tags';
import { answerQueries, fakeResources, testDatasource } from './testing';
import { SageQuery } from './types';

const fetchMock = jest.fn();
setBackendSrv({ fetch: fetchMock } as unknown as BackendSrv);

// Tag filters ("@aws.tag.<Key>") reach every panel: the vended metrics by the tag itself,
// engine, GPU and host series through the endpoints the tag resolves to.

/** Keys and values with dots, spaces, UTF-8, quotes, backslashes and regex metacharacters. */
const HOSTILE: Array<[string, string]> = [
  ['Team', 'search'],
  ['cost.center', 'ads.ranking'],
  ['Owner Name', 'data platform'],
  ['équipe', 'Ωmega — recherche'],
  [`it's "quoted"`, `say "hi"\\n`],
  ['a|b(c)*', 'x.*+?^$|()[]{}\\'],
];

/** Endpoint names with regex metacharacters, so the endpoint matcher must escape them. */
const ENDPOINTS = ['chat.v2', 'a|b', 'x+(y)', 'search'];

const MIXED =
  'sum(sum_over_time(Invocations[5m])) / sum(vllm:num_requests_running) + avg(DCGM_FI_DEV_GPU_UTIL) + max(node_memory_MemTotal_bytes) + count(my_custom_metric)';

/** The braces after metric's first occurrence in expr ("" without), read past quoted strings. */
function selectorOf(expr: string, metric: string): string {
  const from = expr.indexOf(metric) + metric.length;
  if (expr[from] !== '{') {
    return '';
  }
  for (let i = from, quoted = false; i < expr.length; i++) {
    if (quoted && expr[i] === '\\') {
      i++;
    } else if (expr[i] === '"') {
      quoted = !quoted;
    } else if (!quoted && expr[i] === '}') {
      return expr.slice(from, i + 1);
    }
  }
  return '';
}

/** The endpoint regex matcher of a selector, as an anchored regex (PromQL anchors them). */
function endpointRegex(sel: string): RegExp | undefined {
  const m = /"aws\.sagemaker\.endpoint\.name"=~("(?:[^"\\]|\\.)*")/.exec(sel);
  return m ? new RegExp(`^(?:${unquoteString(m[1])})$`) : undefined;
}

describe('applyAdHoc with a tag filter', () => {
  const resolved: Resolution = { endpoints: ENDPOINTS };

  it.each(HOSTILE)('tag %s = %s: the tag on vended and custom metrics, its endpoints on the others', (key, value) => {
    const f = { key: `@aws.tag.${key}`, operator: '=', value };
    const out = applyAdHoc({ refId: 'A', expr: MIXED }, [f], () => resolved);
    const expr = out.query.expr!;
    const tag = { name: f.key, op: '=' as const, value };
    // The grammar reads the matcher back: the quoting of name and value round-trips.
    expect(hasMatcher(expr, tag)).toBe(true);
    const withTag = ['Invocations', 'my_custom_metric'];
    const metrics = [
      'Invocations',
      'vllm:num_requests_running',
      'DCGM_FI_DEV_GPU_UTIL',
      'node_memory_MemTotal_bytes',
      'my_custom_metric',
    ];
    for (const metric of metrics) {
      const sel = selectorOf(expr, metric);
      const re = endpointRegex(sel);
      expect([metric, sel.includes('"@aws.tag.'), re === undefined]).toEqual([
        metric,
        withTag.includes(metric),
        withTag.includes(metric),
      ]);
      if (re) {
        // Every resolved endpoint matches, and nothing that only looks like one.
        expect(ENDPOINTS.filter((e) => re.test(e))).toEqual(ENDPOINTS);
        expect(['chatXv2', 'a', 'b', 'xy', 'x+(y)z', 'searc'].filter((e) => re.test(e))).toEqual([]);
      }
    }
    expect(out.ignored).toEqual([]);
    expect(out.applied).toEqual([
      `${f.key} = ${JSON.stringify(value)}: series without resource tags kept to its endpoints ${ENDPOINTS.join(', ')}`,
    ]);
  });

  it('keeps nothing of the untagged families when the tag has no endpoint in the range', () => {
    const out = applyAdHoc(
      { refId: 'A', expr: 'vllm:num_requests_running' },
      [{ key: '@aws.tag.Team', operator: '=', value: 'x' }],
      () => ({
        endpoints: [],
      })
    );
    expect(out.query.expr).toBe('vllm:num_requests_running{"aws.sagemaker.endpoint.name"=~""}');
    expect(out.applied).toEqual([
      '@aws.tag.Team = "x": series without resource tags kept to its endpoints, none in this range',
    ]);
  });

  it('says why the untagged families are not narrowed when the lookup failed or did not run', () => {
    const f = { key: '@aws.tag.Team', operator: '=|', value: 'a', values: ['a', 'b.c'] };
    const failed = applyAdHoc({ refId: 'A', expr: MIXED }, [f], () => ({
      error: 'api/v1/label/EndpointName/values: throttled',
    }));
    expect(hasMatcher(failed.query.expr!, { name: f.key, op: '=~', value: 'a|b\\.c' })).toBe(true);
    expect(failed.query.expr).not.toContain(ENDPOINT_LABEL);
    expect(failed.ignored).toEqual([
      '@aws.tag.Team =| "a | b.c": series without resource tags are not narrowed; its endpoints could not be looked up: api/v1/label/EndpointName/values: throttled',
    ]);
    expect(applyAdHoc({ refId: 'A', expr: MIXED }, [f]).ignored).toEqual([
      '@aws.tag.Team =| "a | b.c": series without resource tags are not narrowed; its endpoints could not be looked up',
    ]);
    // A query of vended metrics only needs no lookup.
    const vended = applyAdHoc({ refId: 'A', expr: 'sum(Invocations)' }, [f]);
    expect([vended.query.expr, vended.ignored]).toEqual(['sum(Invocations{"@aws.tag.Team"=~"a|b\\\\.c"})', []]);
  });

  it('puts a label no family lists into every selector, and still drops catalog labels a metric lacks', () => {
    const out = applyAdHoc({ refId: 'A', expr: 'vllm:num_requests_running + Invocations' }, [
      { key: 'k8s.cluster name', operator: '=', value: 'a"b' },
      { key: 'gpu', operator: '=', value: '0' },
    ]);
    expect(out.query.expr).toBe(
      'vllm:num_requests_running{"k8s.cluster name"="a\\"b"} + Invocations{"k8s.cluster name"="a\\"b"}'
    );
    expect(out.ignored).toEqual(['gpu = "0": no metric of this query carries gpu']);
  });

  it('narrows the endpoints of a cost, diagnosis or alarms query to the tag’s', () => {
    const f = { key: `@aws.tag.${HOSTILE[4][0]}`, operator: '=', value: HOSTILE[4][1] };
    const cost = applyAdHoc({ refId: 'A', queryType: 'cost', endpoint: 'search,other' }, [f], () => resolved);
    expect([cost.query.endpoint, cost.empty]).toEqual(['search', undefined]);
    expect(cost.applied).toEqual([
      `${f.key} = ${JSON.stringify(f.value)}: kept to its endpoints ${ENDPOINTS.join(', ')}`,
    ]);
    const diag = applyAdHoc({ refId: 'A', queryType: 'diagnosis' }, [f], () => resolved);
    expect(diag.query.endpoint).toBe(ENDPOINTS.join(','));
    const none = applyAdHoc({ refId: 'A', queryType: 'cost' }, [f], () => ({ endpoints: [] }));
    expect(none.empty).toBe(`${f.key} = ${JSON.stringify(f.value)} matches no endpoint in this range`);
    const failed = applyAdHoc({ refId: 'A', queryType: 'alarms', endpoint: 'chat' }, [f], () => ({ error: 'denied' }));
    expect([failed.query.endpoint, failed.ignored]).toEqual([
      'chat',
      [`${f.key} = ${JSON.stringify(f.value)}: its endpoints could not be looked up: denied`],
    ]);
  });
});

describe('TagResolver', () => {
  const range = { from: dateTime(1_000_000), to: dateTime(4_600_000), raw: { from: 'now-1h', to: 'now' } };

  it('asks EndpointName of Invocations with the tag matcher once per burst, and keeps the answer settled', async () => {
    const fetcher = fakeResources({ 'api/v1/label/EndpointName/values': ['search', 'chat.v2'] });
    let now = 1_700_000_000_000;
    const r = new TagResolver(new ResourceClient(fetcher), () => now);
    const f = { key: `@aws.tag.${HOSTILE[4][0]}`, operator: '=', value: HOSTILE[4][1] };
    const answers = await Promise.all([1, 2, 3].map(() => r.resolve('eu-west-1', f, range)));
    expect(answers[2]).toEqual({ endpoints: ['chat.v2', 'search'] });
    expect(fetcher.calls).toEqual([
      {
        path: 'api/v1/label/EndpointName/values',
        params: {
          start: '1000',
          end: '4600',
          limit: 10000,
          'match[]': ['Invocations{"@aws.tag.it\'s \\"quoted\\""="say \\"hi\\"\\\\n"}'],
          region: 'eu-west-1',
        },
      },
    ]);
    expect(r.resolved('eu-west-1', f)).toEqual({ endpoints: ['chat.v2', 'search'] });
    expect(r.resolved('us-east-1', f)).toBeUndefined();
    now += 61_000;
    expect(r.resolved('eu-west-1', f)).toBeUndefined();
  });

  it('turns a failed lookup into an error resolution and asks again next time', async () => {
    const fetcher = fakeResources({});
    const r = new TagResolver(new ResourceClient(fetcher));
    const f = { key: '@aws.tag.Team', operator: '=', value: 'a' };
    const first = await r.resolve('', f, range);
    expect(first).toEqual({ error: 'unexpected resource call api/v1/label/EndpointName/values' });
    await r.resolve('', f, range);
    expect(fetcher.calls).toHaveLength(2);
  });
});

describe('query with a tag filter', () => {
  it('resolves the tag once per region, then sends every panel narrowed, with the notice', async () => {
    answerQueries(
      fetchMock,
      ['A', 'B', 'C'].map((refId) =>
        createDataFrame({ refId, fields: [{ name: 'v', type: FieldType.number, values: [1] }] })
      )
    );
    const fetcher = fakeResources({ 'api/v1/label/EndpointName/values': ['a|b', 'search'] });
    const ds = testDatasource(fetcher);
    const request = {
      targets: [
        { refId: 'A', expr: 'sum(vllm:num_requests_running)', instant: true, range: false },
        { refId: 'B', expr: 'sum(Invocations)', instant: true, range: false },
        { refId: 'C', queryType: 'cost', view: 'spend' },
      ],
      filters: [{ key: '@aws.tag.Owner Name', operator: '=', value: 'data platform' }],
      range: { from: dateTime(1_000_000), to: dateTime(4_600_000), raw: { from: 'now-1h', to: 'now' } },
      app: CoreApp.Dashboard,
      scopedVars: {},
      interval: '1m',
      intervalMs: 60_000,
      maxDataPoints: 100,
      requestId: 'r',
    } as unknown as DataQueryRequest<SageQuery>;
    const response = await firstValueFrom(ds.query(request));
    expect(fetcher.calls.map((c) => c.path)).toEqual(['api/v1/label/EndpointName/values']);
    const sent = fetchMock.mock.calls[0][0].data.queries as SageQuery[];
    expect(sent.map((s) => [s.refId, s.expr ?? s.endpoint])).toEqual([
      ['A', 'sum(vllm:num_requests_running{"aws.sagemaker.endpoint.name"=~"a\\\\|b|search"})'],
      ['B', 'sum(Invocations{"@aws.tag.Owner Name"="data platform"})'],
      ['C', 'a|b,search'],
    ]);
    const notices = Object.fromEntries(
      response.data.map((f: DataFrame) => [f.refId, (f.meta?.notices ?? []).map((n) => n.text)])
    );
    expect(notices).toEqual({
      A: [
        'Ad-hoc tag filters applied through their endpoints:\n@aws.tag.Owner Name = "data platform": series without resource tags kept to its endpoints a|b, search',
      ],
      B: [],
      C: [
        'Ad-hoc tag filters applied through their endpoints:\n@aws.tag.Owner Name = "data platform": kept to its endpoints a|b, search',
      ],
    });
  });
});

describe('discovery cost of a tag filter', () => {
  it('costs one lookup per filter and region for a whole dashboard, and none on a refresh within the minute', async () => {
    answerQueries(fetchMock, []);
    const fetcher = fakeResources({ 'api/v1/label/EndpointName/values': ['search'] });
    const ds = testDatasource(fetcher);
    const panel = (i: number, from: number) =>
      ({
        targets: [{ refId: 'A', expr: `sum(vllm:num_requests_running) + ${i}`, region: i % 2 ? 'eu-west-1' : '' }],
        filters: [
          { key: '@aws.tag.Team', operator: '=', value: 'search' },
          { key: '@aws.tag.cost.center', operator: '!=', value: 'ml 42' },
        ],
        // Each panel computes "now" a few milliseconds apart.
        range: { from: dateTime(from + i), to: dateTime(from + 3_600_000 + i), raw: { from: 'now-1h', to: 'now' } },
        app: CoreApp.Dashboard,
        scopedVars: {},
        interval: '1m',
        intervalMs: 60_000,
        maxDataPoints: 100,
        requestId: `r${i}`,
      }) as unknown as DataQueryRequest<SageQuery>;
    const t = 1_700_000_000_000;
    await Promise.all(Array.from({ length: 30 }, (_, i) => firstValueFrom(ds.query(panel(i, t)))));
    // Two filters in two regions.
    expect(fetcher.calls).toHaveLength(4);
    await Promise.all(Array.from({ length: 30 }, (_, i) => firstValueFrom(ds.query(panel(i, t + 20)))));
    expect(fetcher.calls).toHaveLength(4);
  });
});

describe('the Filters variable offers tag keys and values', () => {
  it.each(HOSTILE)('key @aws.tag.%s: listed, and its values asked by its escaped name', async (key, value) => {
    const label = `@aws.tag.${key}`;
    const path = `api/v1/label/${encodeURIComponent(label)}/values`;
    const fetcher = fakeResources({ 'api/v1/labels': ['__name__', ENDPOINT_LABEL, label], [path]: [value, 'other'] });
    const ds = testDatasource(fetcher);
    expect((await ds.getTagKeys({ filters: [] })).map((k) => k.text)).toContain(label);
    expect((await ds.getTagValues({ key: label, filters: [] })).map((v) => v.text)).toEqual([value, 'other']);
    // The path names the label in one segment whatever it holds.
    expect(fetcher.calls[1].path.split('/')).toHaveLength(5);
    expect(decodeURIComponent(fetcher.calls[1].path.split('/')[3])).toBe(label);
  });
});
