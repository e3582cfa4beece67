import { BackendSrv, BackendSrvRequest, setBackendSrv } from '@grafana/runtime';
import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import fs from 'fs';
import path from 'path';
import React from 'react';
import { Observable, of, throwError } from 'rxjs';

import { AlertRulesSettings, ApiAlertRules } from './AlertRulesSettings';

/** The rules the backend serves (pkg/plugin/alertrules, the generator's) for data source uid "sm". */
function servedRules(): ApiAlertRules {
  const raw = fs.readFileSync(path.join(__dirname, '../../pkg/plugin/alertrules/inferscope-rules.json'), 'utf8');
  return JSON.parse(raw.split('__inferscope_datasource_uid__').join('sm'));
}

type Answer = { status: number; data: unknown };

/** A fake of backendSrv.fetch answering "METHOD url" from a table and recording each request. */
function fakeBackend(answers: Record<string, Answer>) {
  const calls: BackendSrvRequest[] = [];
  const fetch = (req: BackendSrvRequest): Observable<unknown> => {
    calls.push(req);
    const a = answers[`${req.method} ${req.url}`];
    if (!a) {
      return throwError(() => ({ status: 500, data: { message: `unexpected ${req.method} ${req.url}` } }));
    }
    return a.status < 300 ? of({ status: a.status, data: a.data, ok: true }) : throwError(() => a);
  };
  setBackendSrv({ fetch } as unknown as BackendSrv);
  return calls;
}

const RULES_URL = '/api/datasources/uid/sm/resources/alert-rules?format=api';
const FOLDER_URL = '/api/folders/inferscope-alerts';
const groupUrl = (g: string) => `/api/v1/provisioning/folder/inferscope-alerts/rule-groups/${g}`;

function groupAnswers(rules: ApiAlertRules, status = 200): Record<string, Answer> {
  return Object.fromEntries(rules.groups.map((g) => [`PUT ${groupUrl(g.title)}`, { status, data: {} }]));
}

describe('AlertRulesSettings', () => {
  it('creates the missing folder, then installs every group editable, for this data source', async () => {
    const rules = servedRules();
    const calls = fakeBackend({
      [`GET ${RULES_URL}`]: { status: 200, data: rules },
      [`GET ${FOLDER_URL}`]: { status: 404, data: { message: 'folder not found' } },
      'POST /api/folders': { status: 200, data: {} },
      ...groupAnswers(rules),
    });
    render(<AlertRulesSettings uid="sm" />);
    await userEvent.click(screen.getByRole('button', { name: /install alert rules/i }));

    const n = rules.groups.reduce((sum, g) => sum + g.rules.length, 0);
    expect(
      await screen.findByText(`Installed ${n} alert rules in the folder Inferscope alerts, querying this data source.`)
    ).toBeInTheDocument();
    expect(calls.map((c) => `${c.method} ${c.url}`)).toEqual([
      `GET ${RULES_URL}`,
      `GET ${FOLDER_URL}`,
      'POST /api/folders',
      ...rules.groups.map((g) => `PUT ${groupUrl(g.title)}`),
    ]);
    expect(calls[2].data).toEqual({ uid: 'inferscope-alerts', title: 'Inferscope alerts' });
    for (const [i, g] of rules.groups.entries()) {
      const put = calls[3 + i];
      expect(put.headers).toEqual({ 'X-Disable-Provenance': 'true' });
      expect(put.data).toEqual(g);
      expect(JSON.stringify(put.data)).toContain('"datasourceUid":"sm"');
    }
    expect(calls.every((c) => c.showErrorAlert === false)).toBe(true);
  });

  it('uses the folder when it exists', async () => {
    const rules = servedRules();
    const calls = fakeBackend({
      [`GET ${RULES_URL}`]: { status: 200, data: rules },
      [`GET ${FOLDER_URL}`]: { status: 200, data: { uid: 'inferscope-alerts', title: 'Inferscope alerts' } },
      ...groupAnswers(rules),
    });
    render(<AlertRulesSettings uid="sm" />);
    await userEvent.click(screen.getByRole('button', { name: /install alert rules/i }));

    expect(await screen.findByText('Alert rules installed')).toBeInTheDocument();
    expect(calls.some((c) => c.method === 'POST')).toBe(false);
  });

  it('names the step that failed and the permission it needs', async () => {
    const rules = servedRules();
    fakeBackend({
      [`GET ${RULES_URL}`]: { status: 200, data: rules },
      [`GET ${FOLDER_URL}`]: { status: 200, data: {} },
      ...groupAnswers(rules, 403),
    });
    render(<AlertRulesSettings uid="sm" />);
    await userEvent.click(screen.getByRole('button', { name: /install alert rules/i }));

    expect(await screen.findByText('Alert rules not installed')).toBeInTheDocument();
    const text = screen.getByText(/Installing the rule group/).textContent ?? '';
    expect(text).toContain(`Installing the rule group ${rules.groups[0].title} failed (HTTP 403)`);
    expect(text).toContain('permission to create folders and alert rules');
  });

  it('links the provisioning file rendered for this data source', () => {
    render(<AlertRulesSettings uid="sm" />);
    expect(screen.getByRole('link', { name: /download rules/i })).toHaveAttribute(
      'href',
      '/api/datasources/uid/sm/resources/alert-rules?format=file'
    );
  });
});
