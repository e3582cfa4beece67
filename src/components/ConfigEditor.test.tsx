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
import { DEFAULTS, SageOptions, SageSecureJsonData } from '../types';
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
];
const BACKEND_SECRET_KEYS = ['accessKey', 'secretKey', 'sessionToken'];

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
