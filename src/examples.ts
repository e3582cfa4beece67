export interface Example {
  title: string;
  expr: string;
  note: string;
}

/** Ready SageMaker queries; all follow the CloudWatch rules (quoted dotted labels, sum_over_time on deltas). */
export const EXAMPLES: Example[] = [
  {
    title: 'KV cache use per inference component (%)',
    expr: '100 * avg by ("aws.sagemaker.inference_component.name") (vllm:kv_cache_usage_perc)',
    note: 'Near 100% means requests queue or get preempted.',
  },
  {
    title: 'Running and waiting requests',
    expr: 'sum by ("aws.sagemaker.endpoint.name") (vllm:num_requests_running)',
    note: 'Swap in vllm:num_requests_waiting for the queue.',
  },
  {
    title: 'Time to first token, P99 (s)',
    expr: 'histogram_quantile(0.99, sum by ("aws.sagemaker.endpoint.name") (rate(vllm:time_to_first_token_seconds[$__rate_interval])))',
    note: 'Engine histograms are native and cumulative: rate() is right here.',
  },
  {
    title: 'Output tokens per second per instance',
    expr: 'sum by ("@resource.host.id") (rate(vllm:generation_tokens_total[$__rate_interval]))',
    note: 'Generation throughput of each instance.',
  },
  {
    title: 'GPU memory used per instance (%)',
    expr: '100 * sum by ("@resource.host.id") (DCGM_FI_DEV_FB_USED) / (sum by ("@resource.host.id") (DCGM_FI_DEV_FB_USED) + sum by ("@resource.host.id") (DCGM_FI_DEV_FB_FREE))',
    note: 'DCGM frame-buffer gauges, in MiB.',
  },
  {
    title: 'Invocations per minute per endpoint',
    expr: 'sum by (EndpointName) (sum_over_time(Invocations[1m]))',
    note: 'Classic metrics are deltas: sum_over_time, never rate().',
  },
];
