import table from './queryTypes.json';

/**
 * The query types, one table (queryTypes.json) for the editor and the datasource. The backend
 * routes the same names; pkg/models/names_test.go fails when its constants and this table differ.
 * "" is PromQL too, for queries saved by a Prometheus datasource.
 */
export type QueryType = '' | keyof typeof table;

/** The query's type; "" and unknown values read as PromQL (the backend answers an unknown one with an error). */
export function queryTypeOf(query: { queryType?: string }): keyof typeof table {
  const type = query.queryType ?? '';
  return type in table ? (type as keyof typeof table) : 'promql';
}

/** Whether the query is PromQL, so that range/instant, legends and formats apply to it. */
export function runsPromQL(query: { queryType?: string }): boolean {
  return table[queryTypeOf(query)].runsPromQL;
}

/** Whether the query asks the backend for the ranked diagnosis findings. */
export function isDiagnosis(query: { queryType?: string }): boolean {
  return queryTypeOf(query) === 'diagnosis';
}

/** Query types answered from CloudWatch alarms, the SageMaker inventory and CloudTrail's changes. */
export const HEALTH_TYPES = ['alarms', 'alarmHistory', 'inventory', 'changes'] as const;
export type HealthType = (typeof HEALTH_TYPES)[number];

/** Whether the query reads CloudWatch alarms, the SageMaker inventory or the changes (endpoint and IC filters). */
export function isHealthQuery(query: { queryType?: string }): boolean {
  return (HEALTH_TYPES as readonly string[]).includes(queryTypeOf(query));
}

/** Whether the query type has a table/annotations format. */
export function hasEventFormat(query: { queryType?: string }): boolean {
  const type = queryTypeOf(query);
  return type === 'alarmHistory' || type === 'inventory' || type === 'changes';
}

/** The editor's choices, in the table's order. */
export const QUERY_TYPE_OPTIONS = Object.entries(table).map(([value, t]) => ({
  value: value as keyof typeof table,
  label: t.label,
  description: t.description || undefined,
}));
