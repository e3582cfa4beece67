import { ResourceFetcher } from './resources';

export interface RecordedCall {
  path: string;
  params: Record<string, unknown>;
}

/**
 * A fake of the datasource's getResource: answers each path from a table in the Prometheus
 * envelope and records every call, so tests assert on the requests the backend would receive.
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
      return Promise.resolve({ status: 'success', data: answers[path] } as T);
    },
  };
}
