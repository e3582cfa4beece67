import { QueryEditorHelpProps } from '@grafana/data';
import { Button, Stack, Text } from '@grafana/ui';
import React from 'react';

import { SageQuery } from '../types';

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

/** The help panel: click an example to put it in the query. */
export function QueryEditorHelp({ onClickExample }: QueryEditorHelpProps<SageQuery>) {
  return (
    <Stack direction="column" gap={2}>
      <Text element="h3">SageMaker queries for CloudWatch PromQL</Text>
      <Text color="secondary">
        Quote dotted and @ labels (&quot;aws.sagemaker.endpoint.name&quot;), always name the metric, and use
        sum_over_time on classic metrics such as Invocations.
      </Text>
      {EXAMPLES.map((ex) => (
        <Stack key={ex.title} direction="column" gap={0.5}>
          <Text weight="medium">{ex.title}</Text>
          <code>{ex.expr}</code>
          <Stack direction="row" alignItems="center" gap={1}>
            <Text color="secondary" variant="bodySmall">
              {ex.note}
            </Text>
            <Button size="sm" variant="secondary" onClick={() => onClickExample({ refId: 'A', expr: ex.expr })}>
              Use query
            </Button>
          </Stack>
        </Stack>
      ))}
    </Stack>
  );
}
