import { AdHocVariableFilter, CoreApp, DataQueryRequest, dateTime, TimeRange } from '@grafana/data';

import { SageQuery } from '../../src/types';

export function lastHour(): TimeRange {
  const to = dateTime();
  const from = dateTime(to.valueOf() - 60 * 60 * 1000);
  return { from, to, raw: { from: 'now-1h', to: 'now' } };
}

/** The request Grafana's query runner sends for one panel's queries over the last hour, with a dashboard's ad-hoc filters. */
export function panelRequest<T extends SageQuery>(
  targets: T[],
  app: CoreApp,
  filters?: AdHocVariableFilter[]
): DataQueryRequest<T> {
  const range = lastHour();
  return {
    app,
    requestId: `e2e-${Date.now()}`,
    targets,
    filters,
    range,
    interval: '1m',
    intervalMs: 60_000,
    maxDataPoints: 500,
    scopedVars: {},
    timezone: 'utc',
    startTime: Date.now(),
  };
}
