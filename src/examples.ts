import table from './starters.json';

export interface Example {
  title: string;
  expr: string;
  note: string;
}

/**
 * The starter queries: ready SageMaker questions that follow the CloudWatch rules (quoted dotted
 * labels, sum_over_time on deltas). src/starters.json is written by `go generate ./pkg/starters`
 * from the Go list that rig/itest/dashboards checks like the dashboards' queries.
 */
export const EXAMPLES: readonly Example[] = table;
