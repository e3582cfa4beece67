import { config, FetchError, getBackendSrv, isFetchError } from '@grafana/runtime';
import { Alert, Button, FieldSet, LinkButton, Stack, Text } from '@grafana/ui';
import React, { useState } from 'react';
import { lastValueFrom } from 'rxjs';

/** The backend's alert-rules resource with format=api (dashboards/builder's rules for this data source). */
export interface ApiAlertRules {
  folder: { uid: string; title: string };
  groups: Array<{ title: string; folderUid: string; rules: unknown[] }>;
}

/** The resource of the backend that renders the rules for this data source's uid. */
export function alertRulesUrl(uid: string, format: 'api' | 'file'): string {
  return `/api/datasources/uid/${encodeURIComponent(uid)}/resources/alert-rules?format=${format}`;
}

/** A step of the installation that failed, with Grafana's answer. */
export class InstallError extends Error {
  constructor(
    readonly step: string,
    readonly status: number | undefined,
    detail: string
  ) {
    super(`${step} failed${status ? ` (HTTP ${status})` : ''}: ${detail}`);
  }
}

async function call<T>(
  step: string,
  request: { method: string; url: string; data?: unknown; headers?: Record<string, string> }
) {
  try {
    const resp = await lastValueFrom(getBackendSrv().fetch<T>({ ...request, showErrorAlert: false }));
    return resp.data;
  } catch (e) {
    if (isFetchError(e)) {
      throw new InstallError(step, e.status, errorText(e));
    }
    throw new InstallError(step, undefined, String(e));
  }
}

function errorText(e: FetchError): string {
  const data = e.data as { message?: string; error?: string } | undefined;
  const text = data?.message || data?.error || e.statusText || 'no answer';
  return e.status === 403
    ? `${text}. Installing needs the permission to create folders and alert rules (an Editor or Admin).`
    : text;
}

/**
 * Installs the rules through Grafana's alerting provisioning API: their folder when it does not
 * exist, then each group with PUT rule-groups, which creates or updates its rules and sets its
 * interval. X-Disable-Provenance keeps them editable in the UI. Resolves to the number of rules
 * installed and the folder's title.
 */
export async function installAlertRules(uid: string): Promise<{ n: number; folder: string }> {
  const rules = await call<ApiAlertRules>('Reading the rules from the data source', {
    method: 'GET',
    url: alertRulesUrl(uid, 'api'),
  });
  const { folder } = rules;
  try {
    await call('Looking up the folder', { method: 'GET', url: `/api/folders/${encodeURIComponent(folder.uid)}` });
  } catch (e) {
    if (!(e instanceof InstallError && e.status === 404)) {
      throw e;
    }
    await call(`Creating the folder ${folder.title}`, { method: 'POST', url: '/api/folders', data: folder });
  }
  let n = 0;
  for (const group of rules.groups) {
    await call(`Installing the rule group ${group.title}`, {
      method: 'PUT',
      url: `/api/v1/provisioning/folder/${encodeURIComponent(group.folderUid)}/rule-groups/${encodeURIComponent(group.title)}`,
      data: group,
      headers: { 'X-Disable-Provenance': 'true' },
    });
    n += group.rules.length;
  }
  return { n, folder: folder.title };
}

/** The config page's "Alert rules" section: install the rules for this data source, or download them. */
export function AlertRulesSettings({ uid }: { uid: string }) {
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string }>();

  const install = async () => {
    setBusy(true);
    setOutcome(undefined);
    try {
      const { n, folder } = await installAlertRules(uid);
      setOutcome({ ok: true, text: `Installed ${n} alert rules in the folder ${folder}, querying this data source.` });
    } catch (e) {
      setOutcome({ ok: false, text: e instanceof Error ? e.message : String(e) });
    } finally {
      setBusy(false);
    }
  };

  return (
    <FieldSet label="Alert rules">
      <Stack direction="column" gap={1}>
        <Text color="secondary">
          The rules of docs/alerting.md (KV cache saturation, engine queueing, GPU memory, SLO burn rates, …) for this
          data source. Save the data source first. Installing creates them through Grafana&apos;s alerting API in the
          folder Inferscope alerts and replaces earlier copies; they stay editable. For file
          provisioning, download them into provisioning/alerting/.
        </Text>
        <Stack direction="row" gap={1}>
          <Button icon="bell" onClick={install} disabled={busy}>
            {busy ? 'Installing…' : 'Install alert rules'}
          </Button>
          <LinkButton
            variant="secondary"
            icon="download-alt"
            href={`${config.appSubUrl ?? ''}${alertRulesUrl(uid, 'file')}`}
            download="inferscope-rules.yaml"
          >
            Download rules
          </LinkButton>
        </Stack>
        {outcome && (
          <Alert
            severity={outcome.ok ? 'success' : 'error'}
            title={outcome.ok ? 'Alert rules installed' : 'Alert rules not installed'}
          >
            {outcome.text}
          </Alert>
        )}
      </Stack>
    </FieldSet>
  );
}
