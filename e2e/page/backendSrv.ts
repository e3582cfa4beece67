import { BackendSrv, BackendSrvRequest, FetchError, FetchResponse } from '@grafana/runtime';
import { from, lastValueFrom, Observable } from 'rxjs';

/** Query parameters as Grafana serialises them: arrays become repeated keys (match[]=a&match[]=b). */
function queryString(params: BackendSrvRequest['params']): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params ?? {})) {
    for (const v of Array.isArray(value) ? value : [value]) {
      if (v !== undefined && v !== null) {
        search.append(key, String(v));
      }
    }
  }
  const s = search.toString();
  return s ? `?${s}` : '';
}

async function send<T>(options: BackendSrvRequest): Promise<FetchResponse<T>> {
  const method = (options.method ?? 'GET').toUpperCase();
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  let body: string | undefined;
  if (options.data !== undefined && method !== 'GET') {
    headers['Content-Type'] = headers['Content-Type'] ?? 'application/json';
    body = typeof options.data === 'string' ? options.data : JSON.stringify(options.data);
  }
  const url = options.url + queryString(options.params);
  const resp = await fetch(url, { method, headers, body });
  const text = await resp.text();
  let data: unknown = text;
  try {
    data = text ? JSON.parse(text) : {};
  } catch {
    // not JSON: the text itself is the answer, as Grafana's backendSrv keeps it
  }
  const response: FetchResponse<T> = {
    data: data as T,
    status: resp.status,
    statusText: resp.statusText,
    ok: resp.ok,
    headers: resp.headers,
    redirected: resp.redirected,
    type: resp.type,
    url: resp.url,
    config: options,
  };
  if (!resp.ok) {
    const err: FetchError = {
      status: resp.status,
      statusText: resp.statusText,
      data: data as FetchError['data'],
      config: options,
    };
    throw err;
  }
  return response;
}

/**
 * Grafana's backendSrv over the browser's fetch, against the loopback plugin host: the same
 * request and error shapes (FetchResponse, FetchError with data) the real one gives plugins.
 */
export class HostBackendSrv implements BackendSrv {
  fetch<T>(options: BackendSrvRequest): Observable<FetchResponse<T>> {
    return from(send<T>(options));
  }
  async request<T>(options: BackendSrvRequest): Promise<T> {
    return (await lastValueFrom(this.fetch<T>(options))).data;
  }
  datasourceRequest<T>(options: BackendSrvRequest): Promise<FetchResponse<T>> {
    return lastValueFrom(this.fetch<T>(options));
  }
  get<T>(url: string, params?: BackendSrvRequest['params'], requestId?: string, options?: Partial<BackendSrvRequest>) {
    return this.request<T>({ ...options, url, params, requestId, method: 'GET' });
  }
  delete<T>(url: string, data?: unknown, options?: Partial<BackendSrvRequest>) {
    return this.request<T>({ ...options, url, data, method: 'DELETE' });
  }
  post<T>(url: string, data?: unknown, options?: Partial<BackendSrvRequest>) {
    return this.request<T>({ ...options, url, data, method: 'POST' });
  }
  patch<T>(url: string, data: unknown, options?: Partial<BackendSrvRequest>) {
    return this.request<T>({ ...options, url, data, method: 'PATCH' });
  }
  put<T>(url: string, data: unknown, options?: Partial<BackendSrvRequest>) {
    return this.request<T>({ ...options, url, data, method: 'PUT' });
  }
  chunked(): Observable<FetchResponse<Uint8Array>> {
    throw new Error('chunked requests are not served by the test host');
  }
}
