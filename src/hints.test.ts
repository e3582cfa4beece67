import { getHints, Hint } from './hints';
import { EXAMPLES } from './examples';

const ids = (hints: Hint[]) => hints.map((h) => h.id);

describe('getHints', () => {
  it.each([
    ['empty query', '', []],
    ['metric before braces', 'vllm:num_requests_running{"aws.sagemaker.endpoint.name"="ep"}', []],
    ['quoted metric inside braces', '{"http.server.active_requests", "@aws.region"=~"us-.*"}', []],
    ['__name__ matcher', '{__name__="Invocations", EndpointName="ep"}', []],
    ['selector without a metric', '{"aws.sagemaker.endpoint.name"="ep"}', ['selector-without-metric']],
    ['regex on __name__', '{__name__=~"vllm:.*"}', ['selector-without-metric']],
    ['second selector without a metric', 'a{x="1"} / on() {y="2"}', ['selector-without-metric']],
    ['braces inside a string value are ignored', 'up{job="{x}"}', []],
    ['underscored endpoint label', 'up{aws_sagemaker_endpoint_name="ep"}', ['underscored-label']],
    ['underscored label in by()', 'sum by (resource_host_id) (DCGM_FI_DEV_GPU_UTIL)', ['underscored-label']],
    ['underscore text inside a string is fine', 'up{job="aws_sagemaker_endpoint_name"}', []],
    ['rate on a delta metric', 'sum(rate(Invocations{EndpointName="ep"}[5m]))', ['rate-on-delta']],
    ['increase on a per-IC delta metric', 'increase(InvocationsForIc[5m])', ['rate-on-delta']],
    ['irate on quoted delta metric', 'irate({"ModelLatency"}[5m])', ['rate-on-delta']],
    ['rate on a cumulative engine metric', 'rate(vllm:generation_tokens_total[5m])', []],
    ['sum_over_time on a delta metric', 'sum_over_time(Invocation5XXErrors[5m])', []],
  ])('%s', (_, expr, expected) => {
    expect(ids(getHints(expr))).toEqual(expected);
  });

  it('suggests the quoted dotted label as a fix, leaving strings alone', () => {
    const [hint] = getHints('sum by (aws_sagemaker_endpoint_name) (up{job="aws_sagemaker_endpoint_name"})');
    expect(hint.message).toContain('"aws.sagemaker.endpoint.name"');
    expect(hint.fix).toBe('sum by ("aws.sagemaker.endpoint.name") (up{job="aws_sagemaker_endpoint_name"})');
  });

  it('suggests sum_over_time for rate on a delta metric', () => {
    const [hint] = getHints('sum(rate(Invocations[5m])) / 60');
    expect(hint.message).toContain('sum_over_time');
    expect(hint.fix).toBe('sum(sum_over_time(Invocations[5m])) / 60');
    expect(getHints(hint.fix!)).toEqual([]);
  });

  it('gives no hints for the help panel examples', () => {
    for (const ex of EXAMPLES) {
      expect({ title: ex.title, hints: ids(getHints(ex.expr)) }).toEqual({ title: ex.title, hints: [] });
    }
  });
});
