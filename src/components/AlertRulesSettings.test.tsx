import { BackendSrv, BackendSrvRequest, setBackendSrv } from '@grafana/runtime';
import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import fs from 'fs';
import path from 'path';
import React from 'react';
import { from, mergeMap, Observable, of, throwError } from 'rxjs';

import { AlertRulesSettings } from './AlertRulesSettings';
import { ApiAlertRules, ApiRequest } from './alertRulesInstall';
import { FakeGrafana, GRAFANA_9_3, GrafanaBehaviour, MODERN } from './fakeGrafanaAlerting';

/** The rules the backend serves (pkg/plugin/alertrules, the generator's) for data source uid "sm". */
function servedRules(): ApiAlertRules {
  const raw = fs.readFileSync(path.join(__dirname, '../../pkg/plugin/alertrules/inferscope-rules.json'), 'utf8');
  return JSON.parse(raw.split('__inferscope_datasource_uid__').join('sm'));
}

const RULES_URL = '/api/datasources/uid/sm/resources/alert-rules?format=api';

/**
 * backendSrv.fetch over a FakeGrafana, as Grafana's answers reach the page: 2xx emits the response,
 * anything else errors with a FetchError-like object. The data source's resource serves `served`.
 */
function grafanaBehind(behaviour: GrafanaBehaviour, served: { status: number; data: unknown }) {
  const fake = new FakeGrafana(behaviour);
  const calls: BackendSrvRequest[] = [];
  const fetch = (req: BackendSrvRequest): Observable<unknown> => {
    calls.push(req);
    const answer = req.url === RULES_URL ? Promise.resolve(served) : fake.send(req as unknown as ApiRequest);
    return from(answer).pipe(
      mergeMap((a) =>
        a.status >= 200 && a.status < 300
          ? of({ status: a.status, data: a.data, ok: true })
          : throwError(() => ({ ...a, statusText: '' }))
      )
    );
  };
  setBackendSrv({ fetch } as unknown as BackendSrv);
  return { fake, calls };
}

async function clickInstall() {
  render(<AlertRulesSettings uid="sm" />);
  await userEvent.click(screen.getByRole('button', { name: /install alert rules/i }));
}

describe('AlertRulesSettings', () => {
  it.each([MODERN, GRAFANA_9_3].map((b) => [b.name, b] as const))(
    '%s: installs every rule editable and lists them per group',
    async (_name, b) => {
      const rules = servedRules();
      const { fake, calls } = grafanaBehind(b, { status: 200, data: rules });
      await clickInstall();

      const n = rules.groups.reduce((sum, g) => sum + g.rules.length, 0);
      // Grafana 9.3 creates the groups rule by rule, with its default interval: the title asks to check them.
      expect(
        await screen.findByText(
          b === MODERN ? 'Alert rules installed' : /^Alert rules installed, \d+ groups? to check$/
        )
      ).toBeInTheDocument();
      expect(
        screen.getByText(
          `Installed ${n} alert rules in the folder Inferscope alerts, querying this data source: ${n} created, 0 updated.`
        )
      ).toBeInTheDocument();
      expect(screen.getByText('Created the folder Inferscope alerts (uid inferscope-alerts).')).toBeInTheDocument();
      for (const g of rules.groups) {
        expect(screen.getByText(new RegExp(`^${g.title}: created ${g.rules.length} rules`))).toBeInTheDocument();
      }
      expect(fake.rules.size).toBe(n);
      expect(
        [...fake.rules.values()].every(
          (s) => s.provenance === '' && JSON.stringify(s.rule).includes('"datasourceUid":"sm"')
        )
      ).toBe(true);
      expect(calls.every((c) => c.showErrorAlert === false)).toBe(true);
    }
  );

  it('says what was done and what was not when Grafana refuses midway', async () => {
    const rules = servedRules();
    const { fake } = grafanaBehind(GRAFANA_9_3, { status: 200, data: rules });
    let posts = 0;
    fake.intercept = (req) =>
      req.method === 'POST' && req.url.includes('alert-rules') && posts++ === 2
        ? { status: 403, data: { message: 'You do not have permission' } }
        : undefined;
    await clickInstall();

    expect(await screen.findByText('Alert rules partly installed')).toBeInTheDocument();
    const first = rules.groups[0];
    expect(
      screen.getByText(
        `${first.title}: created 2 rules (${first.rules[0].title}, ${first.rules[1].title}), one rule at a time.`
      )
    ).toBeInTheDocument();
    const stopped = screen.getByText(/^Stopped: /).textContent ?? '';
    expect(stopped).toContain(`Creating the rule ${first.rules[2].title} (group ${first.title}) failed (HTTP 403)`);
    expect(stopped).toContain('permission to create folders and alert rules');
    const n = rules.groups.reduce((sum, g) => sum + g.rules.length, 0);
    expect(
      screen.getByText(new RegExp(`^Not installed: ${n - 2} rules \\(${first.rules[2].title}, `))
    ).toBeInTheDocument();
    expect(
      screen.getByText(/click Install again: it updates the rules already there and creates the rest/)
    ).toBeInTheDocument();
    expect(fake.rules.size).toBe(2);
  });

  it('reports a request that got no answer as the step that stopped, after what was done', async () => {
    const rules = servedRules();
    const { fake } = grafanaBehind(MODERN, { status: 200, data: rules });
    const second = rules.groups[1].title;
    fake.intercept = (req) =>
      req.method === 'PUT' && req.url.endsWith(`/rule-groups/${second}`) ? { status: 0, data: undefined } : undefined;
    await clickInstall();

    expect(await screen.findByText('Alert rules partly installed')).toBeInTheDocument();
    expect(
      screen.getByText(`Stopped: Installing the rule group ${second} failed: no answer from Grafana`)
    ).toBeInTheDocument();
    expect(
      screen.getByText(new RegExp(`^${rules.groups[0].title}: created ${rules.groups[0].rules.length} rules`))
    ).toBeInTheDocument();
    expect(fake.rules.size).toBe(rules.groups[0].rules.length);
  });

  it('names the failing read when the data source is not saved', async () => {
    grafanaBehind(MODERN, { status: 404, data: { message: 'Data source not found' } });
    await clickInstall();

    expect(await screen.findByText('Alert rules not installed')).toBeInTheDocument();
    expect(
      screen.getByText(
        'Reading the rules from the data source failed (HTTP 404): Data source not found. Save the data source, then install again.'
      )
    ).toBeInTheDocument();
  });

  it('shows a 200 that is not the rules (a proxy page) as a failed read, not as nothing', async () => {
    const { fake } = grafanaBehind(MODERN, { status: 200, data: '<html><body>Sign in to the proxy</body></html>' });
    await clickInstall();

    expect(await screen.findByText('Alert rules not installed')).toBeInTheDocument();
    expect(
      screen.getByText(
        /^Stopped: Reading the rules from the data source failed: not the plugin's rules \(a text answer/
      )
    ).toBeInTheDocument();
    expect(fake.requests).toEqual([]);
  });

  it('links the provisioning file rendered for this data source', () => {
    render(<AlertRulesSettings uid="sm" />);
    expect(screen.getByRole('link', { name: /download rules/i })).toHaveAttribute(
      'href',
      '/api/datasources/uid/sm/resources/alert-rules?format=file'
    );
  });
});
