import { DataSourcePluginOptionsEditorProps } from '@grafana/data';
import { ConfigSection } from '@grafana/plugin-ui';
import { Button, Field, FieldSet, SecretInput, SecretTextArea, Switch } from '@grafana/ui';
import React, { useState } from 'react';

import { SHARED_STORE_DEFAULTS, sharedStoreErrors } from '../sharedStore';
import { SageOptions, SageSecureJsonData, SharedStoreOptions } from '../types';
import { InputField, NumberField } from './SettingField';

type Props = DataSourcePluginOptionsEditorProps<SageOptions, SageSecureJsonData>;

type SecretKey = 'sharedStorePassword' | 'sharedStoreTLSCACert';
const SECRET_KEYS: SecretKey[] = ['sharedStorePassword', 'sharedStoreTLSCACert'];

/** The addresses as typed: separated by commas or spaces. */
function parseAddresses(text: string): string[] {
  return text.split(/[\s,]+/).filter(Boolean);
}

function withoutStore(jsonData: SageOptions): SageOptions {
  const rest = { ...jsonData };
  delete rest.sharedStore;
  return rest;
}

/**
 * The optional store several replicas share (jsonData.sharedStore and two secrets), checked
 * as the backend checks it. Emptying the addresses turns the store off: the section is
 * left as it is (the backend ignores it without an address), so retyping an address keeps
 * the rest; "Use no store" clears the section, secrets included.
 */
export function SharedStoreSettings(props: Props) {
  const { options, onOptionsChange } = props;
  const { jsonData } = options;
  const store = jsonData.sharedStore ?? {};
  const secureJsonData = options.secureJsonData ?? {};
  const secureJsonFields = options.secureJsonFields ?? {};
  const isSet = (key: SecretKey) => Boolean(secureJsonFields[key] || secureJsonData[key]?.trim());
  // The text keeps what is half typed (a trailing comma); jsonData gets the addresses in it.
  const [addressText, setAddressText] = useState(() => (store.addresses ?? []).join(', '));
  const addresses = parseAddresses(addressText);
  const errors = sharedStoreErrors(store, {
    password: isSet('sharedStorePassword'),
    caCert: isSet('sharedStoreTLSCACert'),
    typedCACert: secureJsonData.sharedStoreTLSCACert,
  });

  // Unset, empty and false keys are dropped, so jsonData holds only what differs from the
  // defaults, and no sharedStore at all when nothing does.
  const set = (patch: SharedStoreOptions) => {
    const next = Object.fromEntries(
      Object.entries({ ...store, ...patch }).filter(
        ([, v]) => v !== undefined && v !== '' && v !== false && !(Array.isArray(v) && v.length === 0)
      )
    );
    onOptionsChange({
      ...options,
      jsonData: Object.keys(next).length ? { ...jsonData, sharedStore: next } : withoutStore(jsonData),
    });
  };

  // A saved secret is reset (cleared on save); a typed one is dropped.
  const withoutSecrets = (keys: SecretKey[]) => {
    const data = { ...secureJsonData };
    const fields = { ...secureJsonFields };
    for (const key of keys) {
      if (fields[key]) {
        fields[key] = false;
        data[key] = '';
      } else {
        delete data[key];
      }
    }
    return { ...options, secureJsonData: data, secureJsonFields: fields };
  };

  const clearStore = () => {
    setAddressText('');
    onOptionsChange({ ...withoutSecrets(SECRET_KEYS), jsonData: withoutStore(jsonData) });
  };

  const onAddresses = (text: string) => {
    setAddressText(text);
    set({ addresses: parseAddresses(text) });
  };

  const secret = (key: SecretKey) => ({
    id: key,
    isConfigured: Boolean(secureJsonFields[key]),
    value: secureJsonData[key] ?? '',
    onChange: (e: React.FormEvent<HTMLInputElement | HTMLTextAreaElement>) =>
      onOptionsChange({ ...options, secureJsonData: { ...secureJsonData, [key]: e.currentTarget.value } }),
    onReset: () => onOptionsChange(withoutSecrets([key])),
  });

  const number = (key: 'database' | 'accountShare' | 'fallbackShare') => ({
    id: `sharedStore.${key}`,
    placeholder: SHARED_STORE_DEFAULTS[key],
    value: store[key],
    error: errors[key],
    onChange: (value: number | undefined) => set({ [key]: value }),
  });

  const text = (key: 'username' | 'tlsServerName' | 'keyPrefix' | 'timeout') => ({
    id: `sharedStore.${key}`,
    value: store[key] ?? '',
    error: key === 'username' ? undefined : errors[key],
    onChange: (e: React.FormEvent<HTMLInputElement>) => set({ [key]: e.currentTarget.value }),
  });

  return (
    <ConfigSection
      title="High availability"
      description="Optional, for several Grafana replicas or several data sources of one AWS account: they share a Redis or Valkey store for the results cache and the account's CloudWatch limits. Off by default: with no address, the plugin keeps its in-process cache and limiter, which need nothing. Setup and sizing: docs/high-availability.md."
      isCollapsible
      isInitiallyOpen={
        Object.keys(store).length > 0 ||
        isSet('sharedStorePassword') ||
        isSet('sharedStoreTLSCACert') ||
        Object.keys(errors).length > 0
      }
    >
      <FieldSet label="Store">
        <InputField
          id="sharedStore.addresses"
          label="Addresses"
          description="host:port of the store (Redis 7, Valkey 8, ElastiCache, MemoryDB); several, separated by commas, are nodes of a Redis Cluster. Empty: no store (the other settings here are kept, unused)."
          width={60}
          placeholder="redis.internal:6379"
          value={addressText}
          error={errors.addresses}
          onChange={(e) => onAddresses(e.currentTarget.value)}
        />
        <Field
          label="Cluster"
          description="The address is a cluster's configuration endpoint (ElastiCache with cluster mode on, MemoryDB). Several addresses are a cluster already."
        >
          <Switch
            id="sharedStore.cluster"
            value={Boolean(store.cluster) || addresses.length > 1}
            disabled={addresses.length > 1}
            onChange={(e) => set({ cluster: e.currentTarget.checked })}
          />
        </Field>
        <NumberField
          label="Database"
          description="0-15; a cluster has only 0."
          min={0}
          max={15}
          {...number('database')}
        />
        <InputField
          label="Username"
          description="An ACL user (ElastiCache RBAC, MemoryDB ACL). Empty: the default user."
          width={40}
          {...text('username')}
        />
        <Field label="Password" htmlFor="sharedStorePassword" description="The user's password, or the AUTH token.">
          <SecretInput width={40} {...secret('sharedStorePassword')} />
        </Field>
        <InputField
          label="Key prefix"
          description={`Keeps the plugin's keys apart from other users of the store: no braces or spaces, at most 64 bytes. Default ${SHARED_STORE_DEFAULTS.keyPrefix}`}
          placeholder={SHARED_STORE_DEFAULTS.keyPrefix}
          {...text('keyPrefix')}
        />
        <InputField
          label="Timeout"
          description={`Every store operation's deadline, 1ms-2s: a slower store counts as unavailable and panels answer from the local cache. Default ${SHARED_STORE_DEFAULTS.timeout}.`}
          placeholder={SHARED_STORE_DEFAULTS.timeout}
          {...text('timeout')}
        />
      </FieldSet>
      <FieldSet label="TLS">
        <Field label="TLS" description="In-transit encryption (required by MemoryDB and ElastiCache Serverless).">
          <Switch
            id="sharedStore.tls"
            value={Boolean(store.tls)}
            onChange={(e) => set({ tls: e.currentTarget.checked })}
          />
        </Field>
        <InputField
          label="Server name"
          description="The name the store's certificate must carry. Empty: the address' host."
          width={60}
          {...text('tlsServerName')}
        />
        <Field
          label="CA certificate"
          htmlFor="sharedStoreTLSCACert"
          description="PEM of a private CA. Empty: the system's roots, to which Amazon's certificates chain."
          invalid={Boolean(errors.tlsCACert)}
          error={errors.tlsCACert}
        >
          <SecretTextArea
            rows={4}
            cols={60}
            placeholder="-----BEGIN CERTIFICATE-----"
            {...secret('sharedStoreTLSCACert')}
          />
        </Field>
      </FieldSet>
      <FieldSet label="Account budget">
        <NumberField
          label="Account share (%)"
          description={`The share of the AWS account's CloudWatch limits (300 queries per second, 30 at once, …) this data source's replicas use together; the rest stays for the account's other clients. Default ${SHARED_STORE_DEFAULTS.accountShare}.`}
          min={1}
          max={100}
          {...number('accountShare')}
        />
        <NumberField
          label="Fallback share (%)"
          description={`The part of the account share one replica keeps to while the store is unavailable and it paces itself alone. Default ${SHARED_STORE_DEFAULTS.fallbackShare}: four replicas together stay within the account share.`}
          min={1}
          max={100}
          {...number('fallbackShare')}
        />
      </FieldSet>
      {(jsonData.sharedStore || isSet('sharedStorePassword') || isSet('sharedStoreTLSCACert')) && (
        <Button variant="secondary" icon="trash-alt" onClick={clearStore}>
          Use no store
        </Button>
      )}
    </ConfigSection>
  );
}
