import {
  DataSourcePluginOptionsEditorProps,
  onUpdateDatasourceJsonDataOption,
  onUpdateDatasourceSecureJsonDataOption,
  SelectableValue,
} from '@grafana/data';
import { ConnectionConfig } from '@grafana/aws-sdk';
import { ConfigSection } from '@grafana/plugin-ui';
import { config } from '@grafana/runtime';
import { Field, FieldSet, RadioButtonGroup, SecretInput, SecureSocksProxySettings } from '@grafana/ui';
import React from 'react';

import { DEFAULTS, SageOptions, SageSecureJsonData } from '../types';
import { AlertRulesSettings } from './AlertRulesSettings';
import { PriceTableSettings } from './PriceTableSettings';
import { RegionSettings } from './RegionSettings';
import { InputField, NumberField } from './SettingField';
import { SharedStoreSettings } from './SharedStoreSettings';

export type Props = DataSourcePluginOptionsEditorProps<SageOptions, SageSecureJsonData>;

const HTTP_METHODS: Array<SelectableValue<'POST' | 'GET'>> = [
  { label: 'POST', value: 'POST' },
  { label: 'GET', value: 'GET' },
];

/** The jsonData keys entered as numbers. */
type NumberKey = 'maxConcurrency' | 'requestsPerSecond' | 'cacheSizeMiB' | 'costPerMillionSamples';

/**
 * AWS authentication comes from @grafana/aws-sdk's ConnectionConfig (the form every AWS
 * plugin shares; it writes authType, defaultRegion, profile, assumeRoleArn, externalId,
 * endpoint and the accessKey/secretKey secrets). The rest are this plugin's own settings.
 * Secrets are never read back: Grafana only reports them as configured.
 */
export function ConfigEditor(props: Props) {
  const { options, onOptionsChange } = props;
  const { jsonData, secureJsonFields } = options;

  // What every number field of a jsonData key shares: its id, default and value.
  const numberField = (key: NumberKey) => ({
    id: key,
    placeholder: DEFAULTS[key],
    value: jsonData[key],
    onChange: (value: number | undefined) => onOptionsChange({ ...options, jsonData: { ...jsonData, [key]: value } }),
  });

  // Resetting clears the stored token on save; the old value is never shown.
  const resetSessionToken = () =>
    onOptionsChange({
      ...options,
      secureJsonFields: { ...secureJsonFields, sessionToken: false },
      secureJsonData: { ...options.secureJsonData, sessionToken: '' },
    });

  return (
    <>
      <ConnectionConfig
        {...(props as unknown as React.ComponentProps<typeof ConnectionConfig>)}
        defaultEndpoint="https://monitoring.{region}.amazonaws.com"
      />
      {jsonData.authType === 'keys' && (
        <Field
          label="Session token"
          htmlFor="sessionToken"
          description="Only for temporary credentials (keys starting with ASIA)."
        >
          <SecretInput
            id="sessionToken"
            width={60}
            isConfigured={Boolean(secureJsonFields?.sessionToken)}
            value={options.secureJsonData?.sessionToken ?? ''}
            onChange={onUpdateDatasourceSecureJsonDataOption(props, 'sessionToken')}
            onReset={resetSessionToken}
          />
        </Field>
      )}
      {/* Grafana's secure socks proxy, offered only when grafana.ini enables it; the backend
          sends the PromQL and AWS calls through it (pkg/plugin/proxy.go). */}
      {config.secureSocksDSProxyEnabled && (
        <SecureSocksProxySettings options={options} onOptionsChange={onOptionsChange} />
      )}
      {/* Every knob below has a working default (shown as the placeholder): a new data source
          needs only the connection above, so they start collapsed, unless some are set. */}
      <ConfigSection
        title="Advanced"
        description="Allowed regions, query pacing, the results cache and prices. Empty fields use the defaults shown."
        isCollapsible
        isInitiallyOpen={advancedIsSet(jsonData)}
      >
        <RegionSettings
          jsonData={jsonData}
          onChange={(patch) => onOptionsChange({ ...options, jsonData: { ...jsonData, ...patch } })}
        />
        <FieldSet label="Query settings">
          <InputField
            id="timeInterval"
            label="Min step"
            description={`Lower bound of the step of every query. Empty = ${DEFAULTS.timeInterval}: CloudWatch stores one sample per minute.`}
            placeholder={DEFAULTS.timeInterval}
            value={jsonData.timeInterval ?? ''}
            onChange={onUpdateDatasourceJsonDataOption(props, 'timeInterval')}
          />
          <InputField
            id="queryTimeout"
            label="Query timeout"
            description={`Per request, retries included (default ${DEFAULTS.queryTimeout}). CloudWatch stops queries after 20s.`}
            placeholder={DEFAULTS.queryTimeout}
            value={jsonData.queryTimeout ?? ''}
            onChange={onUpdateDatasourceJsonDataOption(props, 'queryTimeout')}
          />
          <Field label="HTTP method" description="POST keeps long queries out of URLs; label values always use GET.">
            <RadioButtonGroup<'POST' | 'GET'>
              options={HTTP_METHODS}
              value={jsonData.httpMethod ?? DEFAULTS.httpMethod}
              onChange={(v) => onOptionsChange({ ...options, jsonData: { ...jsonData, httpMethod: v } })}
            />
          </Field>
          <NumberField
            label="Requests per second"
            description={`Queries per second this data source sends to CloudWatch (default ${DEFAULTS.requestsPerSecond}; CloudWatch allows 300 per account). Discovery calls (labels, series, variable values) have their own pace of 5 per second. Throttled calls are retried.`}
            min={0}
            {...numberField('requestsPerSecond')}
          />
          <NumberField
            label="Max concurrency"
            description={`Requests in flight at once from this data source, for queries and for discovery calls each (default ${DEFAULTS.maxConcurrency}; CloudWatch allows 30 per account).`}
            min={1}
            {...numberField('maxConcurrency')}
          />
        </FieldSet>
        <FieldSet label="Results cache">
          <NumberField
            label="Cache size (MiB)"
            description={`Memory for cached query results and variable lookups, shared by all viewers. 0 turns the cache off. Default ${DEFAULTS.cacheSizeMiB}.`}
            min={0}
            {...numberField('cacheSizeMiB')}
          />
          <InputField
            id="cacheRefetchWindow"
            label="Re-fetch window"
            description={`Whenever the cache asks CloudWatch for an answer's new points, it also fetches again the part that is younger than this, because CloudWatch data can arrive minutes late. Default ${DEFAULTS.cacheRefetchWindow}.`}
            placeholder={DEFAULTS.cacheRefetchWindow}
            value={jsonData.cacheRefetchWindow ?? ''}
            onChange={onUpdateDatasourceJsonDataOption(props, 'cacheRefetchWindow')}
          />
          <InputField
            id="cacheFreshFor"
            label="Reuse answers for"
            description={`Default ${DEFAULTS.cacheFreshFor}: an answer is reused without asking CloudWatch until the second boundary of its step (instant queries: of the min step) has passed since it was fetched, e.g. 60 to 120 s for a 60 s step. A refreshed panel then lacks at most its newest point, and late data in the re-fetch window shows up by the next fetch. A duration such as 30s reuses answers for that long instead; 0s never reuses them (every refresh asks for new points and the re-fetch window).`}
            placeholder={DEFAULTS.cacheFreshFor}
            value={jsonData.cacheFreshFor ?? ''}
            onChange={onUpdateDatasourceJsonDataOption(props, 'cacheFreshFor')}
          />
          <NumberField
            label="Price per million samples (USD)"
            description={`For the cost estimate in the query inspector. Default ${DEFAULTS.costPerMillionSamples}, as reported for CloudWatch PromQL API queries; check your AWS pricing.`}
            min={0}
            {...numberField('costPerMillionSamples')}
          />
        </FieldSet>
        <PriceTableSettings
          value={jsonData.priceTable}
          onChange={(priceTable) => onOptionsChange({ ...options, jsonData: { ...jsonData, priceTable } })}
        />
      </ConfigSection>
      <SharedStoreSettings {...props} />
      <AlertRulesSettings uid={options.uid} />
    </>
  );
}

/**
 * Whether a setting of the Advanced section differs from its default: such a data source opens
 * with the section open, so tuned values, and the errors of set ones (a region name, an
 * endpoint row, a price), are in view rather than hidden behind a collapsed section.
 */
export function advancedIsSet(jsonData: SageOptions): boolean {
  const tuned = (Object.keys(DEFAULTS) as Array<keyof typeof DEFAULTS>).some(
    (key) => jsonData[key] !== undefined && jsonData[key] !== '' && jsonData[key] !== DEFAULTS[key]
  );
  return (
    tuned ||
    Boolean(jsonData.allowedRegions?.length) ||
    Object.keys(jsonData.regionEndpoints ?? {}).length > 0 ||
    Boolean(jsonData.priceTable?.length)
  );
}
