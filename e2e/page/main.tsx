// The browser tests' page: mounts one of the plugin's editors (?editor=config|query|variable|
// annotation|filters), or a bundled dashboard (?dashboard=performance|capacity|reliability,
// dashboard.tsx), with the real @grafana/ui, @grafana/data and @grafana/runtime, Grafana's
// services set as Grafana sets them, and getBackendSrv() calling the loopback plugin host
// (rig/cmd/pluginhost), whose answers come from the plugin binary against the emulator.
import {
  AdHocVariableFilter,
  AnnotationEvent,
  CoreApp,
  DataFrame,
  DataSourceInstanceSettings,
  DataSourcePluginContextProvider,
  DataSourceSettings,
  createTheme,
  EventBusSrv,
  MetricFindValue,
} from '@grafana/data';
import { setAppEvents, setBackendSrv, setEchoSrv, setTemplateSrv, TemplateSrv } from '@grafana/runtime';
import { Alert, Button, GlobalStyles, Stack, ThemeContext } from '@grafana/ui';
import React, { useRef, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { lastValueFrom } from 'rxjs';

import { SageAnnotation } from '../../src/annotations';
import { AnnotationQueryEditor } from '../../src/components/AnnotationQueryEditor';
import { ConfigEditor } from '../../src/components/ConfigEditor';
import { QueryEditor } from '../../src/components/QueryEditor';
import { VariableQueryEditor } from '../../src/components/VariableQueryEditor';
import { SageDatasource } from '../../src/datasource';
import plugin from '../../src/plugin.json';
import { SageOptions, SageQuery, SageSecureJsonData } from '../../src/types';
import { VariableQuery } from '../../src/variables';
import { HostBackendSrv } from './backendSrv';
import { DashboardPage } from './dashboard';
import { FiltersPage } from './filters';
import { lastHour, panelRequest } from './request';

const params = new URLSearchParams(location.search);
const dashboard = params.get('dashboard');
const editor = dashboard ? 'dashboard' : (params.get('editor') ?? 'query');
const uid = params.get('uid') ?? (editor === 'config' ? 'config' : 'sagemaker');

setBackendSrv(new HostBackendSrv());
setAppEvents(new EventBusSrv());
// Analytics go nowhere, as in a Grafana with reporting off.
setEchoSrv({
  addBackend: () => {},
  addEvent: () => {},
  flush: () => {},
});
// No dashboard variables on this page: text passes through, as Grafana's does for text
// without variables.
const templateSrv: TemplateSrv = {
  getVariables: () => [],
  replace: (text?: string) => text ?? '',
  containsTemplate: () => false,
  updateTimeRange: () => {},
};
setTemplateSrv(templateSrv);

interface HostSettings {
  id: number;
  uid: string;
  name: string;
  type: string;
  access: 'proxy';
  jsonData: SageOptions;
  secureJsonFields: Record<string, boolean>;
}

function instanceSettings(s: HostSettings): DataSourceInstanceSettings<SageOptions> {
  return {
    id: s.id,
    uid: s.uid,
    name: s.name,
    type: s.type,
    access: s.access,
    jsonData: s.jsonData,
    readOnly: false,
    meta: { ...plugin, info: { ...plugin.info, logos: plugin.info.logos } } as never,
  };
}

function Result({ testId, children }: { testId: string; children: React.ReactNode }) {
  return (
    <pre data-testid={testId} style={{ color: '#ccccdc', whiteSpace: 'pre-wrap' }}>
      {children}
    </pre>
  );
}

/** Grafana's data source settings page: the config editor plus Save & test. */
function ConfigPage({ initial }: { initial: HostSettings }) {
  const [options, setOptions] = useState<DataSourceSettings<SageOptions, SageSecureJsonData>>({
    ...initial,
    orgId: 1,
    typeName: 'Inferscope',
    typeLogoUrl: '',
    url: '',
    user: '',
    database: '',
    basicAuth: false,
    basicAuthUser: '',
    isDefault: false,
    withCredentials: false,
    readOnly: false,
    version: 1,
    secureJsonData: {},
  });
  const [result, setResult] = useState<{ status: string; message: string }>();
  const saveAndTest = async () => {
    setResult(undefined);
    const backend = new HostBackendSrv();
    await backend.put(`/api/datasources/uid/${options.uid}`, {
      name: options.name,
      jsonData: options.jsonData,
      secureJsonData: options.secureJsonData,
    });
    // Grafana reloads the settings after saving: secrets come back as flags only.
    const saved = await backend.get<HostSettings>(`/api/datasources/uid/${options.uid}`);
    setOptions((o) => ({
      ...o,
      secureJsonFields: saved.secureJsonFields,
      secureJsonData: {},
      version: (o.version ?? 0) + 1,
    }));
    const ds = new SageDatasource(instanceSettings(saved), templateSrv);
    try {
      const ok = await ds.testDatasource();
      setResult({ status: ok.status, message: ok.message });
    } catch (e) {
      const err = e as { status?: string; message?: string };
      setResult({ status: err.status ?? 'error', message: err.message ?? String(e) });
    }
  };
  return (
    <DataSourcePluginContextProvider instanceSettings={instanceSettings(initial)}>
      <Stack direction="column" gap={2}>
        <ConfigEditor options={options} onOptionsChange={setOptions} />
        <div>
          <Button onClick={saveAndTest}>Save &amp; test</Button>
        </div>
        {result && (
          <div data-testid="health" data-status={result.status}>
            <Alert
              severity={result.status === 'success' ? 'success' : 'error'}
              title={result.status === 'success' ? 'Data source is working' : 'Save & test failed'}
            >
              {result.message}
            </Alert>
          </div>
        )}
      </Stack>
    </DataSourcePluginContextProvider>
  );
}

function describeFrames(frames: DataFrame[]): string {
  return frames
    .map((f) => {
      const value = f.fields.find((x) => x.type === 'number');
      const labels = value?.labels ? JSON.stringify(value.labels) : '';
      return `${f.refId} ${f.meta?.type ?? ''} ${f.length} rows ${labels}`;
    })
    .join('\n');
}

/**
 * What Grafana's query inspector shows of a response: each frame's executed query (its Query
 * tab) and stats (its Stats tab), for the frames that carry them.
 */
function inspectFrames(frames: DataFrame[]): string {
  return frames
    .filter((f) => f.meta?.executedQueryString || f.meta?.stats?.length)
    .map((f) =>
      [f.meta?.executedQueryString, ...(f.meta?.stats ?? []).map((s) => `${s.displayName}: ${s.value}`)]
        .filter(Boolean)
        .join('\n')
    )
    .join('\n\n');
}

/** A panel's query editor: runs the query through /api/ds/query on Shift+Enter or blur. */
function QueryPage({ ds }: { ds: SageDatasource }) {
  const [query, setQuery] = useState<SageQuery>({ refId: 'A', ...ds.getDefaultQuery(CoreApp.Explore) } as SageQuery);
  // Editors call onChange then onRunQuery at once (a picked format or region); Grafana runs
  // the changed query, so the run reads the latest one, not this render's.
  const latest = useRef(query);
  const change = (q: SageQuery) => {
    latest.current = q;
    setQuery(q);
  };
  const [result, setResult] = useState('');
  const [inspected, setInspected] = useState('');
  const range = useState(lastHour)[0];
  const run = async () => {
    setResult('');
    setInspected('');
    const resp = await lastValueFrom(ds.query(panelRequest([latest.current], CoreApp.Explore)));
    setResult(resp.error ? `error: ${resp.error.message}` : `${resp.data.length} frames\n${describeFrames(resp.data)}`);
    setInspected(inspectFrames(resp.data));
  };
  return (
    <Stack direction="column" gap={2}>
      <QueryEditor
        datasource={ds}
        query={query}
        onChange={change}
        onRunQuery={() => void run()}
        range={range}
        app={CoreApp.Explore}
      />
      <Result testId="expr">{query.expr}</Result>
      <Result testId="query-result">{result}</Result>
      <Result testId="query-inspector">{inspected}</Result>
    </Stack>
  );
}

function VariablePage({ ds }: { ds: SageDatasource }) {
  const [query, setQuery] = useState<VariableQuery>({ refId: 'variable', query: '' } as VariableQuery);
  const [values, setValues] = useState<MetricFindValue[]>();
  const [error, setError] = useState('');
  const preview = async () => {
    setError('');
    setValues(undefined);
    try {
      setValues(await ds.metricFindQuery(query, { range: lastHour() }));
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <Stack direction="column" gap={2}>
      <VariableQueryEditor datasource={ds} query={query} onChange={setQuery} onRunQuery={() => {}} />
      <div>
        <Button onClick={() => void preview()}>Run query</Button>
      </div>
      <Result testId="variable-values">
        {error ? `error: ${error}` : values ? `${values.length} values\n${values.map((v) => v.text).join('\n')}` : ''}
      </Result>
    </Stack>
  );
}

/** The dashboard's annotation settings: the editor, then the events Grafana would draw. */
function AnnotationPage({ ds }: { ds: SageDatasource }) {
  const [annotation, setAnnotation] = useState<SageAnnotation>({
    name: 'Scaling',
    enable: true,
    iconColor: 'red',
    target: { refId: 'Anno' },
  } as SageAnnotation);
  const [events, setEvents] = useState<AnnotationEvent[]>();
  const range = useState(lastHour)[0];
  const support = ds.annotations!;
  const preview = async () => {
    setEvents(undefined);
    const prepared = support.prepareAnnotation!(annotation) as SageAnnotation;
    const resp = await lastValueFrom(ds.query(panelRequest([prepared.target!], CoreApp.Dashboard)));
    setEvents(await lastValueFrom(support.processEvents!(prepared, resp.data)));
  };
  const query = annotation.target ?? { refId: 'Anno' };
  return (
    <Stack direction="column" gap={2}>
      <AnnotationQueryEditor
        datasource={ds}
        query={query}
        onChange={(target) => setAnnotation({ ...annotation, target })}
        onRunQuery={() => {}}
        annotation={annotation}
        onAnnotationChange={setAnnotation}
        range={range}
      />
      <div>
        <Button onClick={() => void preview()}>Preview events</Button>
      </div>
      <Result testId="annotation-events">
        {events
          ? `${events.length} events\n${events.map((e) => `${e.title} [${(e.tags ?? []).join(',')}]`).join('\n')}`
          : ''}
      </Result>
    </Stack>
  );
}

async function main() {
  const root = createRoot(document.getElementById('root')!);
  const resp = await fetch(`/api/datasources/uid/${uid}`);
  if (!resp.ok) {
    root.render(<Alert title="no data source">{await resp.text()}</Alert>);
    return;
  }
  const settings: HostSettings = await resp.json();
  const ds = new SageDatasource(instanceSettings(settings), templateSrv);
  const pages: Record<string, React.ReactNode> = {
    config: <ConfigPage initial={settings} />,
    query: <QueryPage ds={ds} />,
    variable: <VariablePage ds={ds} />,
    annotation: <AnnotationPage ds={ds} />,
    filters: <FiltersPage ds={ds} />,
  };
  if (dashboard) {
    // A dashboard takes the window's width, as Grafana's grid does.
    const container = document.getElementById('root')!;
    container.style.maxWidth = 'none';
    pages.dashboard = (
      <DashboardPage
        settings={instanceSettings(settings)}
        name={dashboard}
        from={params.get('from') ?? undefined}
        filters={filtersParam()}
        width={window.innerWidth - 32}
      />
    );
  }
  root.render(
    <ThemeContext.Provider value={createTheme({ colors: { mode: 'dark' } })}>
      <GlobalStyles />
      <div data-testid={`page-${editor}`}>{pages[editor] ?? <Alert title={`unknown editor ${editor}`} />}</div>
    </ThemeContext.Provider>
  );
  // Uncaught errors in the editors reach the test through the console and this event.
  window.addEventListener('unhandledrejection', (e) => console.error('unhandled rejection', e.reason));
  document.body.dataset.ready = 'true';
}

/** ?filters=: the Filters variable's filters as JSON ([{key, operator, value}]), as a user picks them. */
function filtersParam(): AdHocVariableFilter[] | undefined {
  const raw = params.get('filters');
  return raw === null ? undefined : JSON.parse(raw);
}

void main();
