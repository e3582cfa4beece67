import {
  DataFrame,
  dataFrameToJSON,
  DataSourceInstanceSettings,
  FieldType,
  ScopedVars,
  TypedVariableModel,
} from '@grafana/data';
import { BackendSrvRequest, TemplateSrv } from '@grafana/runtime';
import { of } from 'rxjs';

import { SageDatasource } from './datasource';
import { REGIONS_PATH, ResourceFetcher } from './resources';
import { SageOptions } from './types';

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
      if (path === REGIONS_PATH) {
        return Promise.resolve(answers[path] as T);
      }
      if (path.startsWith('inventory/')) {
        return Promise.resolve({ values: answers[path] } as T);
      }
      return Promise.resolve({ status: 'success', data: answers[path] } as T);
    },
  };
}

/**
 * fakeResources per region: a call is answered from the table of its region parameter ("" =
 * none, the default region); a region in `failing` rejects as Grafana does when the backend
 * answers an error (a FetchError carrying the backend's body). Every call is recorded.
 */
export function fakeRegionalResources(
  byRegion: Record<string, Record<string, unknown>>,
  failing: Record<string, string> = {}
): ResourceFetcher & { calls: RecordedCall[] } {
  const calls: RecordedCall[] = [];
  const fakes = new Map(Object.entries(byRegion).map(([region, answers]) => [region, fakeResources(answers)]));
  return {
    calls,
    getResource<T>(path: string, params: Record<string, unknown> = {}): Promise<T> {
      calls.push({ path, params });
      const region = String(params.region ?? '');
      if (region in failing) {
        return Promise.reject({
          status: 502,
          statusText: 'Bad Gateway',
          data: { status: 'error', errorType: 'server_error', error: failing[region] },
        });
      }
      const fake = fakes.get(region);
      return fake ? fake.getResource<T>(path, params) : Promise.reject(new Error(`no answers for region "${region}"`));
    },
  };
}

/** A seeded generator of numbers in [0, 1) (mulberry32), so a random test's failure reproduces. */
export function mulberry32(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface TemplateVariable {
  value: string | string[];
  multi?: boolean;
  includeAll?: boolean;
}

/**
 * Mimics TemplateSrv's contract: $name and ${name} resolve from scoped variables first, then
 * dashboard variables, and the formatter gets the value and the variable; getVariables lists
 * the dashboard variables by name.
 */
export function fakeTemplateSrv(variables: Record<string, TemplateVariable>): TemplateSrv {
  return {
    getVariables: () => Object.keys(variables).map((name) => ({ name }) as TypedVariableModel),
    containsTemplate: () => false,
    updateTimeRange: () => {},
    replace(target?: string, scopedVars: ScopedVars = {}, format?: string | Function) {
      return (target ?? '').replace(/\$\{(\w+)\}|\$(\w+)/g, (match, braced, bare) => {
        const name = braced ?? bare;
        const scoped = scopedVars[name];
        const variable: TemplateVariable | undefined = scoped ? { value: String(scoped.value) } : variables[name];
        if (!variable) {
          return match;
        }
        if (typeof format === 'function') {
          return format(variable.value, variable);
        }
        // Grafana's default format for several values is glob: {a,b}.
        const v = variable.value;
        return Array.isArray(v) ? (v.length === 1 ? v[0] : `{${v.join(',')}}`) : v;
      });
    },
  };
}

export const settings = {
  id: 1,
  uid: 'sm',
  type: 'inferscope-sagemaker-datasource',
  name: 'SageMaker',
  access: 'proxy',
  jsonData: {},
  meta: { id: 'inferscope-sagemaker-datasource' },
  readOnly: false,
} as unknown as DataSourceInstanceSettings<SageOptions>;

/**
 * A real data source whose resource calls go to a fake (recorded) and whose variables are
 * given, for the editors' tests.
 */
export function testDatasource(
  fetcher: ResourceFetcher,
  variables: Record<string, TemplateVariable> = {},
  jsonData: SageOptions = {}
): SageDatasource {
  const ds = new SageDatasource({ ...settings, jsonData }, fakeTemplateSrv(variables));
  ds.getResource = <T>(path: string, params?: Record<string, unknown>) => fetcher.getResource<T>(path, params);
  return ds;
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

/**
 * Makes a mocked backendSrv fetch answer /api/ds/query with these frames, by refId, as the
 * backend does.
 */
export function answerQueries(fetchMock: jest.Mock, frames: DataFrame[]) {
  fetchMock.mockImplementation((req: BackendSrvRequest) => {
    const results: Record<string, { frames: unknown[] }> = {};
    for (const f of frames) {
      (results[f.refId!] ??= { frames: [] }).frames.push(dataFrameToJSON(f));
    }
    return of({ data: { results }, status: 200, ok: true, config: req });
  });
}
