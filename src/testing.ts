import { FieldType } from '@grafana/data';

import { ResourceFetcher } from './resources';

export interface RecordedCall {
  path: string;
  params: Record<string, unknown>;
}

/**
 * A fake of the datasource's getResource: answers each path from a table in the Prometheus
 * envelope (the inventory paths in theirs, {"values": [...]}) and records every call, so
 * tests assert on the requests the backend would receive.
 */
export function fakeResources(answers: Record<string, unknown>): ResourceFetcher & { calls: RecordedCall[] } {
  const calls: RecordedCall[] = [];
  return {
    calls,
    getResource<T>(path: string, params: Record<string, unknown> = {}): Promise<T> {
      calls.push({ path, params });
      if (!(path in answers)) {
        return Promise.reject(new Error(`unexpected resource call ${path}`));
      }
      if (path.startsWith('inventory/')) {
        return Promise.resolve({ values: answers[path] } as T);
      }
      return Promise.resolve({ status: 'success', data: answers[path] } as T);
    },
  };
}

/** The fields of the backend's alarms frame, in order (issue 11 contract). */
export const ALARMS_FRAME_FIELDS: Array<[string, FieldType]> = [
  ['resource', FieldType.string],
  ['resource_type', FieldType.string],
  ['endpoint', FieldType.string],
  ['inference_component', FieldType.string],
  ['instance', FieldType.string],
  ['state', FieldType.string],
  ['severity', FieldType.number],
  ['source', FieldType.string],
  ['alarm', FieldType.string],
  ['alarms', FieldType.number],
  ['reason', FieldType.string],
  ['metric', FieldType.string],
  ['threshold', FieldType.number],
  ['updated', FieldType.time],
  ['alarm_url', FieldType.string],
  ['console_url', FieldType.string],
  ['region', FieldType.string],
];

/** The fields of the backend's inventory table frame, in order (issue 11 contract). */
export const INVENTORY_FRAME_FIELDS: Array<[string, FieldType]> = [
  ['kind', FieldType.string],
  ['endpoint', FieldType.string],
  ['variant', FieldType.string],
  ['inference_component', FieldType.string],
  ['status', FieldType.string],
  ['instance_type', FieldType.string],
  ['instances', FieldType.number],
  ['desired_instances', FieldType.number],
  ['copies', FieldType.number],
  ['desired_copies', FieldType.number],
  ['model', FieldType.string],
  ['created', FieldType.time],
  ['modified', FieldType.time],
  ['failure_reason', FieldType.string],
  ['console_url', FieldType.string],
  ['region', FieldType.string],
];
