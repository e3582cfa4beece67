import { ResourcePrometheusClient } from './promql/client';
import { ResourceClient } from './resources';
import { fakeResources } from './testing';

const answers = {
  'api/v1/labels': ['aws.sagemaker.endpoint.name'],
  'api/v1/label/__name__/values': ['vllm:num_requests_running'],
  'api/v1/label/aws.sagemaker.endpoint.name/values': ['chat'],
  'api/v1/series': [{ __name__: 'up' }],
  'api/v1/query': { resultType: 'scalar', result: [0, '1'] },
  'inventory/endpoints': ['chat'],
  'inventory/components': ['ic'],
  regions: ['us-east-1', 'us-west-2'],
};

/** Every discovery call of the client, once. */
async function callAll(c: ResourceClient) {
  await c.labelNames();
  await c.labelValues('aws.sagemaker.endpoint.name', ['up']);
  await c.metricNames();
  await c.series(['up']);
  await c.instantQuery('up');
  await c.endpoints();
  await c.inferenceComponents(['chat']);
}

describe('ResourceClient regions', () => {
  it('sends no region parameter for the default region', async () => {
    const fetcher = fakeResources(answers);
    await callAll(new ResourceClient(fetcher));
    expect(fetcher.calls).toHaveLength(7);
    expect(fetcher.calls.filter((c) => 'region' in c.params)).toEqual([]);
  });

  it('sends region=<r> with every call of a client bound to r, keeping the other parameters', async () => {
    const plain = fakeResources(answers);
    await callAll(new ResourceClient(plain));
    const fetcher = fakeResources(answers);
    const client = new ResourceClient(fetcher).inRegion('eu-west-1');
    await callAll(client);
    expect(fetcher.calls.map((c) => [c.path, c.params.region])).toEqual(plain.calls.map((c) => [c.path, 'eu-west-1']));
    fetcher.calls.forEach((c, i) => {
      const { region, ...rest } = c.params;
      // Timestamps may differ by the second between the two runs.
      expect({ ...rest, start: undefined, end: undefined, time: undefined }).toEqual({
        ...plain.calls[i].params,
        start: undefined,
        end: undefined,
        time: undefined,
      });
    });
  });

  it('keeps the same client for the same region and binds a new one otherwise', () => {
    const c = new ResourceClient(fakeResources(answers));
    expect(c.inRegion('')).toBe(c);
    const west = c.inRegion('us-west-2');
    expect(west.region).toBe('us-west-2');
    expect(west.inRegion('us-west-2')).toBe(west);
    expect(west.inRegion('').region).toBe('');
  });

  it('lists regions from the regions resource', async () => {
    const fetcher = fakeResources(answers);
    await expect(new ResourceClient(fetcher).inRegion('eu-west-1').regions()).resolves.toEqual([
      'us-east-1',
      'us-west-2',
    ]);
    // The list is the data source's, not one region's.
    expect(fetcher.calls).toEqual([{ path: 'regions', params: {} }]);
  });

  it.each([[{ values: ['us-east-1'] }], [null], [['us-east-1', 3]]])(
    'reports a regions answer of the wrong shape (%j) with the path',
    async (body) => {
      const fetcher = fakeResources({ regions: body });
      await expect(new ResourceClient(fetcher).regions()).rejects.toThrow(
        'regions: unexpected response shape, want ["us-east-1", ...]'
      );
    }
  );
});

describe('completion in a region', () => {
  it("asks the completion client's region, and caches per client so regions do not share answers", async () => {
    const fetcher = fakeResources(answers);
    const base = new ResourceClient(fetcher);
    const east = new ResourcePrometheusClient(base.inRegion('us-east-1'));
    const west = new ResourcePrometheusClient(base.inRegion('us-west-2'));
    await east.labelNames('up');
    await west.labelNames('up');
    await east.labelValues('aws.sagemaker.endpoint.name', 'up');
    await east.metricNames();
    await west.series('up');
    expect(fetcher.calls.map((c) => [c.path, c.params.region])).toEqual([
      ['api/v1/labels', 'us-east-1'],
      ['api/v1/labels', 'us-west-2'],
      ['api/v1/label/aws.sagemaker.endpoint.name/values', 'us-east-1'],
      ['api/v1/label/__name__/values', 'us-east-1'],
      ['api/v1/series', 'us-west-2'],
    ]);
  });
});
