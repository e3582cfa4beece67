import {
  DataSourceInstanceSettings,
  DataSourcePluginContextProvider,
  DataSourceSettings,
  EventBusSrv,
} from '@grafana/data';
import { config, setAppEvents } from '@grafana/runtime';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import React, { useState } from 'react';

import { regionNameError } from '../regions';
import { DEFAULTS, SageOptions, SageSecureJsonData, SharedStoreOptions } from '../types';
import { ConfigEditor } from './ConfigEditor';
import { withComboboxLayout } from './testing';

type Settings = DataSourceSettings<SageOptions, SageSecureJsonData>;

/** Every jsonData key the Go backend reads (pkg/models); the editor must write no others. */
const BACKEND_JSON_KEYS = [
  'authType',
  'defaultRegion',
  'profile',
  'assumeRoleArn',
  'externalId',
  'endpoint',
  'enableSecureSocksProxy',
  'timeInterval',
  'queryTimeout',
  'httpMethod',
  'maxConcurrency',
  'requestsPerSecond',
  'cacheSizeMiB',
  'cacheRefetchWindow',
  'cacheFreshFor',
  'costPerMillionSamples',
  'allowedRegions',
  'regionEndpoints',
  'sharedStore',
];
const BACKEND_SECRET_KEYS = ['accessKey', 'secretKey', 'sessionToken', 'sharedStorePassword', 'sharedStoreTLSCACert'];

function settings(jsonData: SageOptions, secureJsonFields: Record<string, boolean> = {}): Settings {
  return {
    id: 1,
    uid: 'sm',
    orgId: 1,
    name: 'SageMaker',
    type: 'inferscope-sagemaker-datasource',
    typeName: 'SageMaker',
    typeLogoUrl: '',
    access: 'proxy',
    url: '',
    user: '',
    basicAuth: false,
    basicAuthUser: '',
    isDefault: false,
    readOnly: false,
    withCredentials: false,
    jsonData,
    secureJsonFields,
    version: 1,
  } as Settings;
}

/** Renders the page as Grafana does; most tests open its Advanced section first when collapsed. */
function renderEditor(initial: Settings, { advanced = true } = {}) {
  const changes: Settings[] = [];
  function Harness() {
    const [options, setOptions] = useState(initial);
    return (
      <ConfigEditor
        options={options}
        onOptionsChange={(o) => {
          changes.push(o);
          setOptions(o);
        }}
      />
    );
  }
  // Grafana renders config pages inside a plugin context; aws-sdk's save reporter needs it.
  const instance = {
    type: initial.type,
    meta: { id: initial.type, info: { version: '0.1.0' } },
  } as unknown as DataSourceInstanceSettings;
  render(
    <DataSourcePluginContextProvider instanceSettings={instance}>
      <Harness />
    </DataSourcePluginContextProvider>
  );
  const expand = screen.queryByRole('button', { name: 'Expand section Advanced' });
  if (advanced && expand) {
    fireEvent.click(expand);
  }
  return { changes, last: () => changes[changes.length - 1] };
}

// What Grafana provides to a config page at runtime and aws-sdk's ConnectionConfig reads.
beforeAll(() => {
  setAppEvents(new EventBusSrv());
  config.awsAllowedAuthProviders = ['default', 'keys', 'credentials', 'ec2_iam_role'];
  config.awsAssumeRoleEnabled = true;
});

// The tests open Combobox lists.
withComboboxLayout();

describe('ConfigEditor', () => {
  it('opens with only the connection a new data source needs; the tuning knobs under Advanced', async () => {
    renderEditor(settings({ authType: 'default' }), { advanced: false });
    expect(screen.getByLabelText(/^Authentication Provider/)).toBeInTheDocument();
    expect(screen.getByLabelText(/^Default Region/)).toBeInTheDocument();
    expect(screen.getByLabelText(/^Endpoint/)).toBeInTheDocument();
    const knobs = [/^Allowed regions/, /^Min step/, /^Requests per second/, /^Max concurrency/, /^Cache size/];
    for (const label of knobs) {
      expect(screen.queryByLabelText(label)).not.toBeInTheDocument();
    }
    await userEvent.click(screen.getByRole('button', { name: 'Expand section Advanced' }));
    for (const label of knobs) {
      expect(screen.getByLabelText(label)).toBeInTheDocument();
    }
    expect(screen.getByLabelText(/^Max concurrency/)).toHaveAttribute('placeholder', String(DEFAULTS.maxConcurrency));
  });

  it.each<[string, SageOptions, boolean]>([
    ['a new data source', {}, false],
    [
      'settings at their defaults',
      { maxConcurrency: DEFAULTS.maxConcurrency, httpMethod: 'POST', timeInterval: '' },
      false,
    ],
    ['no allowed regions', { allowedRegions: [], regionEndpoints: {} }, false],
    ['a tuned knob', { maxConcurrency: 4 }, true],
    ['a tuned duration', { cacheFreshFor: '30s' }, true],
    ['allowed regions', { allowedRegions: ['us-west-2'] }, true],
    ['an endpoint per region', { regionEndpoints: { 'us-west-2': 'http://127.0.0.1:9091' } }, true],
    ['a price table', { priceTable: [{ instanceType: 'ml.g5.xlarge', usdPerHour: 1.4 }] }, true],
  ])('opens Advanced with %s: %s', (_, jsonData, open) => {
    renderEditor(settings({ authType: 'default', ...jsonData }), { advanced: false });
    expect(
      screen.getByRole('button', { name: `${open ? 'Collapse' : 'Expand'} section Advanced` })
    ).toBeInTheDocument();
    expect(Boolean(screen.queryByLabelText(/^Max concurrency/))).toBe(open);
  });

  it('shows the error of a saved allowed region without the user opening Advanced', () => {
    renderEditor(settings({ authType: 'default', allowedRegions: ['US West 2'] }), { advanced: false });
    expect(screen.getByText(regionNameError('US West 2')!)).toBeInTheDocument();
  });

  it('writes the backend keys for the AWS and query settings', async () => {
    const { changes, last } = renderEditor(settings({ authType: 'default', defaultRegion: 'us-east-1' }));
    fireEvent.change(screen.getByLabelText(/^Assume Role ARN/), { target: { value: 'arn:aws:iam::1:role/r' } });
    fireEvent.change(screen.getByLabelText(/^External ID/), { target: { value: 'ext' } });
    fireEvent.change(screen.getByLabelText(/^Endpoint/), { target: { value: 'http://127.0.0.1:9090' } });
    fireEvent.change(screen.getByLabelText(/^Min step/), { target: { value: '60s' } });
    fireEvent.change(screen.getByLabelText(/^Query timeout/), { target: { value: '30s' } });
    fireEvent.change(screen.getByLabelText(/^Requests per second/), { target: { value: '8' } });
    fireEvent.change(screen.getByLabelText(/^Max concurrency/), { target: { value: '4' } });
    await userEvent.click(screen.getByLabelText(/^GET/));

    expect(last().jsonData).toEqual({
      authType: 'default',
      defaultRegion: 'us-east-1',
      assumeRoleArn: 'arn:aws:iam::1:role/r',
      externalId: 'ext',
      endpoint: 'http://127.0.0.1:9090',
      timeInterval: '60s',
      queryTimeout: '30s',
      requestsPerSecond: 8,
      maxConcurrency: 4,
      httpMethod: 'GET',
    });
    for (const c of changes) {
      expect(Object.keys(c.jsonData).filter((k) => !BACKEND_JSON_KEYS.includes(k))).toEqual([]);
    }
  });

  it('picks the auth provider and region through the shared AWS selects', async () => {
    const { last } = renderEditor(settings({}));
    // With no auth type yet, the AWS form selects the first allowed provider.
    await waitFor(() => expect(last().jsonData.authType).toBe('default'));
    fireEvent.keyDown(screen.getByLabelText(/^Authentication Provider/), { key: 'ArrowDown' });
    fireEvent.click(await screen.findByText('Access & secret key'));
    expect(last().jsonData.authType).toBe('keys');
    fireEvent.keyDown(screen.getByLabelText(/^Default Region/), { key: 'ArrowDown' });
    fireEvent.click(await screen.findByText('eu-west-1'));
    expect(last().jsonData).toEqual({ authType: 'keys', defaultRegion: 'eu-west-1' });
  });

  it("shows the backend's defaults (src/defaults.json) for unset keys", () => {
    renderEditor(settings({ authType: 'default' }));
    const { httpMethod, ...typed } = DEFAULTS;
    for (const [key, value] of Object.entries(typed)) {
      expect([key, document.getElementById(key)?.getAttribute('placeholder')]).toEqual([key, String(value)]);
    }
    expect(screen.getByLabelText(httpMethod)).toBeChecked();
  });

  it('clears a number limit back to the default', async () => {
    const { last } = renderEditor(settings({ authType: 'default', maxConcurrency: 4 }));
    await userEvent.clear(screen.getByLabelText(/^Max concurrency/));
    expect(last().jsonData.maxConcurrency).toBeUndefined();
  });

  it('keeps typed keys in secureJsonData only', async () => {
    const { changes, last } = renderEditor(settings({ authType: 'keys', defaultRegion: 'us-east-1' }));
    fireEvent.change(screen.getByLabelText(/^Access Key ID/), { target: { value: 'AKIAEXAMPLE' } });
    fireEvent.change(screen.getByLabelText(/^Secret Access Key/), { target: { value: 'wJalrSECRET' } });
    fireEvent.change(screen.getByLabelText(/^Session token/), { target: { value: 'TOKEN' } });
    expect(last().secureJsonData).toEqual({
      accessKey: 'AKIAEXAMPLE',
      secretKey: 'wJalrSECRET',
      sessionToken: 'TOKEN',
    });
    for (const c of changes) {
      expect(JSON.stringify(c.jsonData)).not.toMatch(/AKIAEXAMPLE|wJalrSECRET|TOKEN/);
      expect(Object.keys(c.secureJsonData ?? {}).filter((k) => !BACKEND_SECRET_KEYS.includes(k))).toEqual([]);
    }
  });

  it('shows configured secrets as configured, never their values, and resets them', async () => {
    const { last } = renderEditor(
      settings(
        { authType: 'keys', defaultRegion: 'us-east-1' },
        { accessKey: true, secretKey: true, sessionToken: true }
      )
    );
    expect(screen.getAllByPlaceholderText('Configured').length).toBeGreaterThanOrEqual(2);
    for (const input of document.querySelectorAll('input')) {
      expect(input.value).not.toMatch(/AKIA|SECRET|TOKEN/);
    }
    const token = screen.getByLabelText(/^Session token/) as HTMLInputElement;
    expect(token.value).toBe('configured');
    expect(token).toBeDisabled();
    await userEvent.click(screen.getAllByRole('button', { name: 'Reset' })[0]);
    expect(last().secureJsonFields.sessionToken).toBe(false);
    expect(last().secureJsonData?.sessionToken).toBe('');
  });
});

describe('ConfigEditor regions', () => {
  /** Opens the Allowed regions select, types, and picks the option (or creates the typed value). */
  async function addAllowed(text: string) {
    const input = screen.getByLabelText('Allowed regions');
    fireEvent.focus(input);
    fireEvent.keyDown(input, { key: 'ArrowDown' });
    fireEvent.change(input, { target: { value: text } });
    const options = await screen.findAllByRole('option');
    fireEvent.click(options.find((o) => o.textContent?.startsWith(text)) ?? options[0]);
  }

  it('offers the PromQL regions and takes others, writing allowedRegions', async () => {
    const { changes, last } = renderEditor(settings({ authType: 'default', defaultRegion: 'us-east-1' }));
    const input = screen.getByLabelText('Allowed regions');
    fireEvent.focus(input);
    fireEvent.keyDown(input, { key: 'ArrowDown' });
    const options = (await screen.findAllByRole('option')).map((o) => o.textContent);
    expect(options).toHaveLength(31);
    expect(options).toEqual(expect.arrayContaining(['us-east-1', 'eu-west-1', 'ap-southeast-7', 'mx-central-1']));
    await addAllowed('eu-west-1');
    await addAllowed('il-central-1');
    expect(last().jsonData.allowedRegions).toEqual(['eu-west-1', 'il-central-1']);
    expect(screen.queryByText(/is not an AWS region name/)).not.toBeInTheDocument();
    for (const c of changes) {
      expect(Object.keys(c.jsonData).filter((k) => !BACKEND_JSON_KEYS.includes(k))).toEqual([]);
    }
  });

  it('flags a name that is not a region, with the fix', async () => {
    renderEditor(settings({ authType: 'default', allowedRegions: ['us-west-2'] }));
    await addAllowed('eu-west1');
    expect(
      screen.getByText('"eu-west1" is not an AWS region name (like us-east-1); did you mean eu-west-1?')
    ).toBeInTheDocument();
  });

  it('drops the key when the last allowed region is removed', () => {
    const { last } = renderEditor(settings({ authType: 'default', allowedRegions: ['us-west-2'] }));
    fireEvent.click(screen.getByLabelText('Remove us-west-2'));
    expect(last().jsonData.allowedRegions).toBeUndefined();
  });

  it('says what empty means', () => {
    renderEditor(settings({ authType: 'default' }));
    expect(
      screen.getByText(/^Regions a query may name .* Empty: the default region, every region/)
    ).toBeInTheDocument();
    expect(
      screen.getByText(/A region without a row uses Endpoint above .* else https:\/\/monitoring.<region>.amazonaws.com/)
    ).toBeInTheDocument();
  });

  it('edits endpoints per region as rows and writes regionEndpoints', () => {
    const { last } = renderEditor(settings({ authType: 'default' }));
    fireEvent.click(screen.getByRole('button', { name: 'Add region endpoint' }));
    fireEvent.change(screen.getByLabelText('Region of endpoint 1'), { target: { value: 'us-west-2' } });
    // A region without a URL yet is named, not dropped.
    expect(
      screen.getByText('us-west-2 needs an endpoint URL (or remove the row to use the default)')
    ).toBeInTheDocument();
    fireEvent.change(screen.getByLabelText('Endpoint URL 1'), { target: { value: 'http://127.0.0.1:9091' } });
    fireEvent.click(screen.getByRole('button', { name: 'Add region endpoint' }));
    fireEvent.change(screen.getByLabelText('Region of endpoint 2'), { target: { value: 'eu-west-1' } });
    fireEvent.change(screen.getByLabelText('Endpoint URL 2'), { target: { value: 'https://emulator.internal:8443' } });
    expect(last().jsonData.regionEndpoints).toEqual({
      'us-west-2': 'http://127.0.0.1:9091',
      'eu-west-1': 'https://emulator.internal:8443',
    });
    expect(screen.queryByText(/needs an endpoint URL|must use https|not an AWS region/)).not.toBeInTheDocument();

    fireEvent.click(screen.getByLabelText('Remove endpoint 1'));
    expect(last().jsonData.regionEndpoints).toEqual({ 'eu-west-1': 'https://emulator.internal:8443' });
    fireEvent.click(screen.getByLabelText('Remove endpoint 1'));
    expect(last().jsonData.regionEndpoints).toBeUndefined();
  });

  it.each([
    [
      ['us-west2', 'http://127.0.0.1:9091'],
      '"us-west2" is not an AWS region name (like us-east-1); did you mean us-west-2?',
    ],
    [['us-west-2', 'http://10.0.0.5:9091'], /must use https \(plain http only to 127\.0\.0\.1, ::1 or localhost\)/],
    [['', 'https://x.example.com'], 'Name the region this endpoint serves, e.g. us-west-2'],
  ])('flags the row %j', (row, message) => {
    renderEditor(settings({ authType: 'default' }));
    fireEvent.click(screen.getByRole('button', { name: 'Add region endpoint' }));
    fireEvent.change(screen.getByLabelText('Region of endpoint 1'), { target: { value: row[0] } });
    fireEvent.change(screen.getByLabelText('Endpoint URL 1'), { target: { value: row[1] } });
    expect(screen.getByText(message)).toBeInTheDocument();
  });

  it('opens stored endpoints as rows and flags a repeated region', () => {
    const { last } = renderEditor(
      settings({ authType: 'default', regionEndpoints: { 'us-west-2': 'http://127.0.0.1:9091' } })
    );
    expect(screen.getByLabelText('Region of endpoint 1')).toHaveValue('us-west-2');
    expect(screen.getByLabelText('Endpoint URL 1')).toHaveValue('http://127.0.0.1:9091');
    fireEvent.click(screen.getByRole('button', { name: 'Add region endpoint' }));
    fireEvent.change(screen.getByLabelText('Region of endpoint 2'), { target: { value: 'us-west-2' } });
    fireEvent.change(screen.getByLabelText('Endpoint URL 2'), { target: { value: 'http://127.0.0.1:9999' } });
    expect(screen.getByText('us-west-2 has an endpoint above already; remove one of the rows')).toBeInTheDocument();
    // The first row keeps the region.
    expect(last().jsonData.regionEndpoints).toEqual({ 'us-west-2': 'http://127.0.0.1:9091' });
  });
});

describe('ConfigEditor secure socks proxy', () => {
  afterEach(() => {
    config.secureSocksDSProxyEnabled = false;
  });

  it('is offered only when Grafana enables the proxy', () => {
    config.secureSocksDSProxyEnabled = false;
    renderEditor(settings({ authType: 'default', defaultRegion: 'us-east-1' }));
    expect(screen.queryByText('Secure Socks Proxy')).toBeNull();
  });

  it('writes enableSecureSocksProxy, a key the backend reads', async () => {
    config.secureSocksDSProxyEnabled = true;
    const { last } = renderEditor(settings({ authType: 'default', defaultRegion: 'us-east-1' }));
    const section = screen.getByText('Secure Socks Proxy').parentElement as HTMLElement;
    await userEvent.click(within(section).getByRole('switch'));
    expect(last().jsonData.enableSecureSocksProxy).toBe(true);
    expect(Object.keys(last().jsonData).filter((k) => !BACKEND_JSON_KEYS.includes(k))).toEqual([]);
  });
});

describe('ConfigEditor high availability', () => {
  const PEM = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUTest+CA/cert==\n-----END CERTIFICATE-----';

  /** Renders the page with Advanced collapsed and opens High availability when it is collapsed. */
  function renderStore(
    sharedStore?: SharedStoreOptions,
    secureJsonFields: Record<string, boolean> = {},
    { open = true } = {}
  ) {
    const r = renderEditor(
      settings({ authType: 'default', defaultRegion: 'us-east-1', sharedStore }, secureJsonFields),
      {
        advanced: false,
      }
    );
    const expand = screen.queryByRole('button', { name: 'Expand section High availability' });
    if (open && expand) {
      fireEvent.click(expand);
    }
    return r;
  }
  const type = (label: RegExp, value: string) => fireEvent.change(screen.getByLabelText(label), { target: { value } });
  const alerts = () => screen.queryAllByRole('alert').map((a) => a.textContent);

  it.each<[string, SharedStoreOptions | undefined, Record<string, boolean>, boolean]>([
    ['no store', undefined, {}, false],
    ['an empty store object', {}, {}, false],
    ['a store', { addresses: ['redis.internal:6379'] }, {}, true],
    ['a username without an address', { username: 'grafana' }, {}, true],
    ['TLS without an address', { tls: true }, {}, true],
    ['a saved password without an address', undefined, { sharedStorePassword: true }, true],
  ])('opens High availability with %s: %j', (_, sharedStore, secureJsonFields, open) => {
    renderStore(sharedStore, secureJsonFields, { open: false });
    expect(
      screen.getByRole('button', { name: `${open ? 'Collapse' : 'Expand'} section High availability` })
    ).toBeInTheDocument();
    expect(Boolean(screen.queryByLabelText(/^Addresses/))).toBe(open);
    // Settings kept without an address are no error: the store is simply off.
    expect(alerts()).toEqual([]);
  });

  it('says it is optional and off by default, and where the docs are', () => {
    renderStore(undefined, {}, { open: false });
    expect(
      screen.getByText(/^Optional, for several Grafana replicas or several data sources of one AWS account/)
    ).toBeInTheDocument();
    expect(
      screen.getByText(
        /Off by default: with no address.*need nothing\. Setup and sizing: docs\/high-availability\.md\./
      )
    ).toBeInTheDocument();
  });

  it('writes the settings to jsonData.sharedStore and the secrets to secureJsonData only', async () => {
    const { changes, last } = renderStore();
    type(/^Addresses/, 'node-1.internal:6379, node-2.internal:6380');
    // Two addresses are a cluster: the switch says so and cannot be turned off.
    expect(screen.getByLabelText(/^Cluster/)).toBeChecked();
    expect(screen.getByLabelText(/^Cluster/)).toBeDisabled();
    type(/^Username/, 'grafana');
    type(/^Password/, 'hunter2');
    await userEvent.click(screen.getByLabelText(/^TLS/));
    type(/^Server name/, 'redis.internal');
    type(/^CA certificate/, PEM);
    type(/^Key prefix/, 'team-a:');
    type(/^Timeout/, '100ms');
    type(/^Account share/, '60');
    type(/^Fallback share/, '20');

    expect(last().jsonData).toEqual({
      authType: 'default',
      defaultRegion: 'us-east-1',
      sharedStore: {
        addresses: ['node-1.internal:6379', 'node-2.internal:6380'],
        username: 'grafana',
        tls: true,
        tlsServerName: 'redis.internal',
        keyPrefix: 'team-a:',
        timeout: '100ms',
        accountShare: 60,
        fallbackShare: 20,
      },
    });
    expect(last().secureJsonData).toEqual({ sharedStorePassword: 'hunter2', sharedStoreTLSCACert: PEM });
    expect(alerts()).toEqual([]);
    for (const c of changes) {
      expect(JSON.stringify(c.jsonData)).not.toMatch(/hunter2|BEGIN CERTIFICATE/);
      expect(Object.keys(c.jsonData).filter((k) => !BACKEND_JSON_KEYS.includes(k))).toEqual([]);
      expect(Object.keys(c.secureJsonData ?? {}).filter((k) => !BACKEND_SECRET_KEYS.includes(k))).toEqual([]);
    }
  });

  it('writes one address, the cluster switch and a database; emptied fields drop their keys', async () => {
    const { last } = renderStore();
    type(/^Addresses/, 'clustercfg.cache.amazonaws.com:6379');
    expect(screen.getByLabelText(/^Cluster/)).not.toBeChecked();
    type(/^Database/, '3');
    expect(last().jsonData.sharedStore).toEqual({ addresses: ['clustercfg.cache.amazonaws.com:6379'], database: 3 });
    await userEvent.click(screen.getByLabelText(/^Cluster/));
    expect(screen.getByText('3, but a Redis Cluster has only database 0: set it to 0')).toBeInTheDocument();
    type(/^Database/, '');
    type(/^Timeout/, '1s');
    type(/^Timeout/, '');
    expect(last().jsonData.sharedStore).toEqual({ addresses: ['clustercfg.cache.amazonaws.com:6379'], cluster: true });
    expect(alerts()).toEqual([]);
  });

  it("shows the backend's defaults as placeholders", () => {
    renderStore();
    expect(screen.getByLabelText(/^Key prefix/)).toHaveAttribute('placeholder', 'inferscope:');
    expect(screen.getByLabelText(/^Timeout/)).toHaveAttribute('placeholder', '50ms');
    expect(screen.getByLabelText(/^Database/)).toHaveAttribute('placeholder', '0');
    expect(screen.getByLabelText(/^Account share/)).toHaveAttribute('placeholder', '80');
    expect(screen.getByLabelText(/^Fallback share/)).toHaveAttribute('placeholder', '25');
  });

  const store = (s: SharedStoreOptions): SharedStoreOptions => ({ addresses: ['redis.internal:6379'], ...s });

  it.each<[SharedStoreOptions, Record<string, boolean>, string]>([
    [
      { addresses: ['redis.internal'] },
      {},
      '"redis.internal" is not host:port: write it as redis.internal:6379 (IPv6 as [::1]:6379)',
    ],
    [
      { addresses: ['::1:6379'] },
      {},
      '"::1:6379" is not host:port: write it as redis.internal:6379 (IPv6 as [::1]:6379)',
    ],
    [{ addresses: [':6379'] }, {}, '":6379" is not host:port: write it as redis.internal:6379 (IPv6 as [::1]:6379)'],
    [{ addresses: ['redis:0'] }, {}, '"redis:0" has no valid port: use 1-65535, usually 6379'],
    [{ addresses: ['redis:65536'] }, {}, '"redis:65536" has no valid port: use 1-65535, usually 6379'],
    [{ addresses: ['[::1]:redis'] }, {}, '"[::1]:redis" has no valid port: use 1-65535, usually 6379'],
    [store({ database: 16 }), {}, '16 is out of range: use 0-15 (0 when unsure)'],
    [store({ database: -1 }), {}, '-1 is out of range: use 0-15 (0 when unsure)'],
    [store({ cluster: true, database: 2 }), {}, '2, but a Redis Cluster has only database 0: set it to 0'],
    [
      { addresses: ['a.internal:6379', 'b.internal:6379'], database: 2 },
      {},
      '2, but a Redis Cluster has only database 0: set it to 0',
    ],
    [store({ timeout: '50' }), {}, '"50" is not a duration: use one such as 50ms'],
    [store({ timeout: '1d' }), {}, '"1d" is not a duration: use one such as 50ms'],
    [
      store({ timeout: '3s' }),
      {},
      '3s is out of range: use 1ms-2s; the default, 50ms, keeps a slow store from slowing panels',
    ],
    [
      store({ timeout: '0s' }),
      {},
      '0s is out of range: use 1ms-2s; the default, 50ms, keeps a slow store from slowing panels',
    ],
    [
      store({ keyPrefix: '{team}:' }),
      {},
      `"{team}:" contains a brace or a space: use letters, digits and ':' such as "inferscope:"`,
    ],
    [
      store({ keyPrefix: 'team a:' }),
      {},
      `"team a:" contains a brace or a space: use letters, digits and ':' such as "inferscope:"`,
    ],
    [store({ keyPrefix: 'x'.repeat(65) }), {}, '65 bytes long: use at most 64'],
    // Bytes, not characters: é is two.
    [store({ keyPrefix: 'é'.repeat(33) }), {}, '66 bytes long: use at most 64'],
    [
      store({ keyPrefix: '  ' }),
      {},
      `Empty: use a prefix such as "inferscope:", so the plugin's keys stay apart from other users of the store`,
    ],
    [store({ accountShare: 101 }), {}, '101 is not a percentage: use 1-100, or 0 for the default (80)'],
    [store({ fallbackShare: -5 }), {}, '-5 is not a percentage: use 1-100, or 0 for the default (25)'],
    [store({ fallbackShare: 2.5 }), {}, '2.5 is not a percentage: use 1-100, or 0 for the default (25)'],
    [store({ tlsServerName: 'redis.internal' }), {}, 'Set, but TLS is off: turn TLS on, or clear the server name'],
    [store({}), { sharedStoreTLSCACert: true }, 'Set, but TLS is off: turn TLS on, or clear the CA certificate'],
  ])('flags %j (secrets %j): %s', (sharedStore, secureJsonFields, message) => {
    renderStore(sharedStore, secureJsonFields, { open: false });
    // Opened by itself: the store is configured, or the error is in view.
    expect(alerts()).toEqual([message]);
  });

  it.each<SharedStoreOptions>([
    { addresses: ['[::1]:6379'] },
    { addresses: ['10.0.0.5:6379', 'redis-2.internal:6380'], cluster: true, database: 0 },
    store({ database: 15, timeout: '2s', keyPrefix: 'x'.repeat(64), accountShare: 100, fallbackShare: 1 }),
    store({ timeout: '1.5ms', keyPrefix: 'team-a:prod:', accountShare: 0, fallbackShare: 0 }),
    store({ tls: true, tlsServerName: 'redis.internal', username: 'grafana' }),
  ])('takes %j', (sharedStore) => {
    renderStore(sharedStore, { sharedStorePassword: true });
    expect(alerts()).toEqual([]);
  });

  it('flags a typed address and a typed CA as they are typed, and clears the error when fixed', async () => {
    renderStore();
    type(/^Addresses/, 'redis.internal:6379, redis.internal');
    expect(alerts()).toEqual([
      '"redis.internal" is not host:port: write it as redis.internal:6379 (IPv6 as [::1]:6379)',
    ]);
    type(/^Addresses/, 'redis.internal:6379, ');
    expect(alerts()).toEqual([]);
    await userEvent.click(screen.getByLabelText(/^TLS/));
    type(/^CA certificate/, 'not a certificate');
    expect(alerts()).toEqual([
      "Holds no PEM certificate: paste the CA's certificate, from -----BEGIN CERTIFICATE----- to -----END CERTIFICATE-----",
    ]);
    type(/^CA certificate/, PEM);
    expect(alerts()).toEqual([]);
    // TLS off with the CA still there.
    await userEvent.click(screen.getByLabelText(/^TLS/));
    expect(alerts()).toEqual(['Set, but TLS is off: turn TLS on, or clear the CA certificate']);
  });

  it('turns the store off when the addresses are emptied, keeping the rest for when one is typed again', async () => {
    const { last } = renderStore(
      { addresses: ['redis.internal:6379'], username: 'grafana', tls: true, timeout: '100ms', accountShare: 50 },
      { sharedStorePassword: true, sharedStoreTLSCACert: true }
    );
    await userEvent.clear(screen.getByLabelText(/^Addresses/));
    expect(last().jsonData.sharedStore).toEqual({ username: 'grafana', tls: true, timeout: '100ms', accountShare: 50 });
    expect(last().secureJsonFields).toEqual({ sharedStorePassword: true, sharedStoreTLSCACert: true });
    expect(screen.getByLabelText(/^Username/)).toHaveValue('grafana');
    expect(screen.getByLabelText(/^Password/)).toHaveValue('configured');
    expect(alerts()).toEqual([]);
    type(/^Addresses/, 'redis2.internal:6379');
    expect(last().jsonData.sharedStore).toEqual({
      addresses: ['redis2.internal:6379'],
      username: 'grafana',
      tls: true,
      timeout: '100ms',
      accountShare: 50,
    });
  });

  it('keeps a typed password while the address is retyped', async () => {
    const { last } = renderStore();
    type(/^Addresses/, 'redis.internal:6379');
    type(/^Password/, 'hunter2');
    await userEvent.clear(screen.getByLabelText(/^Addresses/));
    expect(last().jsonData.sharedStore).toBeUndefined();
    expect(last().secureJsonData).toEqual({ sharedStorePassword: 'hunter2' });
  });

  it('clears settings left without an address with "Use no store"', async () => {
    const { last } = renderStore({ username: 'grafana' }, { sharedStorePassword: true, accessKey: true });
    expect(alerts()).toEqual([]);
    await userEvent.click(screen.getByRole('button', { name: 'Use no store' }));
    expect(last().jsonData.sharedStore).toBeUndefined();
    // Only the store's secrets are reset.
    expect(last().secureJsonFields).toEqual({ sharedStorePassword: false, accessKey: true });
  });

  it('resets one saved secret, never showing it', async () => {
    const { last } = renderStore(
      { addresses: ['redis.internal:6379'], tls: true },
      { sharedStorePassword: true, sharedStoreTLSCACert: true }
    );
    const password = screen.getByLabelText(/^Password/);
    expect(password).toBeDisabled();
    const ca = within(screen.getByRole('group', { name: 'TLS' }));
    await userEvent.click(ca.getByRole('button', { name: 'Reset' }));
    expect(last().secureJsonFields).toEqual({ sharedStorePassword: true, sharedStoreTLSCACert: false });
    expect(last().secureJsonData).toEqual({ sharedStoreTLSCACert: '' });
    type(/^CA certificate/, PEM);
    expect(last().secureJsonData).toEqual({ sharedStoreTLSCACert: PEM });
  });
});
