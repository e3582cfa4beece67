import { config, getBackendSrv, isFetchError } from '@grafana/runtime';
import { Alert, Button, FieldSet, LinkButton, Stack, Text } from '@grafana/ui';
import React, { useState } from 'react';
import { lastValueFrom } from 'rxjs';

import {
  answerText,
  ApiAlertRules,
  ApiAnswer,
  describeReport,
  GrafanaApi,
  installRules,
  ReportText,
} from './alertRulesInstall';

/** The resource of the backend that renders the rules for this data source's uid. */
export function alertRulesUrl(uid: string, format: 'api' | 'file'): string {
  return `/api/datasources/uid/${encodeURIComponent(uid)}/resources/alert-rules?format=${format}`;
}

/** Grafana's HTTP API through backendSrv, every HTTP answer resolved: the installer reads the statuses. */
function backendApi(): GrafanaApi {
  return {
    async send(req) {
      try {
        const resp = await lastValueFrom(getBackendSrv().fetch({ ...req, showErrorAlert: false }));
        return { status: resp.status, data: resp.data };
      } catch (e) {
        if (!isFetchError(e)) {
          throw e;
        }
        // No status: no answer (network, aborted); the installer reports it as the step's failure.
        if (!e.status) {
          throw new Error(e.statusText || 'no answer from Grafana');
        }
        return { status: e.status, data: e.data ?? e.statusText };
      }
    },
  };
}

/** Reads the rules rendered for this data source and installs them; resolves to the report in words. */
export async function installAlertRules(uid: string): Promise<ReportText> {
  const api = backendApi();
  const step = 'Reading the rules from the data source';
  let rules: ApiAnswer;
  try {
    rules = await api.send({ method: 'GET', url: alertRulesUrl(uid, 'api') });
  } catch (e) {
    rules = { status: 0, data: e instanceof Error ? e.message : String(e) };
  }
  if (rules.status < 200 || rules.status >= 300) {
    return {
      severity: 'error',
      title: 'Alert rules not installed',
      lines: [
        `${step} failed${rules.status ? ` (HTTP ${rules.status})` : ''}: ${answerText(rules)}.` +
          (rules.status === 404 ? ' Save the data source, then install again.' : ''),
        'Nothing was installed.',
      ],
    };
  }
  return describeReport(await installRules(api, rules.data as ApiAlertRules));
}

/** The config page's "Alert rules" section: install the rules for this data source, or download them. */
export function AlertRulesSettings({ uid }: { uid: string }) {
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<ReportText>();

  const install = async () => {
    setBusy(true);
    setOutcome(undefined);
    try {
      setOutcome(await installAlertRules(uid));
    } catch (e) {
      // installRules reports its failures; this is anything else, which must not pass unseen.
      setOutcome({
        severity: 'error',
        title: 'Alert rules not installed',
        lines: [`Installing failed: ${e instanceof Error ? e.message : String(e)}`],
      });
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
          folder Inferscope alerts (or the one of that title the provisioning file made) and updates earlier copies;
          they stay editable. Rules provisioned from a file are left as they are. For file provisioning, download them
          into provisioning/alerting/.
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
          <Alert severity={outcome.severity} title={outcome.title}>
            <ul>
              {outcome.lines.map((line) => (
                <li key={line}>{line}</li>
              ))}
            </ul>
          </Alert>
        )}
      </Stack>
    </FieldSet>
  );
}
