import fs from 'fs';
import path from 'path';

import { mulberry32 } from '../testing';
import { ApiAlertRules, ApiRule, describeReport, installRules, InstallReport, RuleRef } from './alertRulesInstall';
import {
  CREATES_IGNORES_HEADER,
  FakeGrafana,
  GRAFANA_9_3,
  GrafanaBehaviour,
  MODERN,
  NO_GROUP_PUT,
  Provenance,
  StoredRule,
} from './fakeGrafanaAlerting';

/** The rules the backend serves (pkg/plugin/alertrules, the generator's) for data source uid "sm". */
function servedRules(): ApiAlertRules {
  const raw = fs.readFileSync(path.join(__dirname, '../../pkg/plugin/alertrules/inferscope-rules.json'), 'utf8');
  return JSON.parse(raw.split('__inferscope_datasource_uid__').join('sm'));
}

const TITLE = 'Inferscope alerts';
const FILE_FOLDER = 'bd7f2c1a-file'; // the uid Grafana gives the folder a provisioning file names by title

type Before = 'absent' | Provenance;

/** An earlier version of a rule, as an older plugin or file wrote it. */
function stale(r: ApiRule, folderUID: string): ApiRule {
  return { ...r, folderUID, for: '99m', annotations: { summary: 'an older summary' } };
}

/**
 * A Grafana in one of the states users install into: "fresh" (nothing), "existing" (the folder and a
 * seeded mix of rules absent, editable and "api"), "file" (the file's folder, another uid, and a seeded
 * mix of rules from the file and absent ones), "allFile" (every rule from the file).
 */
function grafana(behaviour: GrafanaBehaviour, state: 'fresh' | 'existing' | 'file' | 'allFile', seed: number) {
  const fake = new FakeGrafana(behaviour);
  const rules = servedRules();
  const rnd = mulberry32(seed);
  const before = new Map<string, Before>();
  const kinds: Before[] = {
    fresh: ['absent'],
    existing: ['absent', '', 'api'],
    file: ['absent', 'file'],
    allFile: ['file'],
  }[state] as Before[];
  const folder = state === 'file' || state === 'allFile' ? FILE_FOLDER : rules.folder.uid;
  if (state !== 'fresh') {
    fake.folders.set(folder, TITLE);
  }
  // A dashboard folder whose title contains ours, so search's word match returns more than the folder.
  fake.folders.set('inferscope', 'Inferscope');
  // Someone's own rules in some of the groups, which installing must keep.
  const others: StoredRule[] = [];
  if (state !== 'fresh') {
    for (const g of rules.groups.filter(() => rnd() < 0.5)) {
      const own = { ...g.rules[0], uid: `own-${g.title}`, title: `My own ${g.title} rule`, folderUID: folder };
      others.push({ rule: own, provenance: rnd() < 0.5 ? '' : 'file' });
      fake.rules.set(own.uid, { ...others[others.length - 1] });
      fake.groupIntervals.set(`${folder}/${g.title}`, 60);
    }
  }
  for (const r of rules.groups.flatMap((g) => g.rules)) {
    const kind = kinds[Math.floor(rnd() * kinds.length)];
    before.set(r.uid, kind);
    if (kind !== 'absent') {
      fake.rules.set(r.uid, { rule: stale(r, folder), provenance: kind });
      fake.groupIntervals.set(`${folder}/${r.ruleGroup}`, 60);
    }
  }
  return { fake, rules, before, folder, others };
}

const uids = (rs: RuleRef[]) => rs.map((r) => r.uid).sort();
const all = (report: InstallReport, k: 'created' | 'updated' | 'fromFile' | 'readOnly') =>
  uids(report.groups.flatMap((g) => g[k]));

/** The state every install must end in, from the state before and what the version allows. */
function expectInstalled(
  fake: FakeGrafana,
  rules: ApiAlertRules,
  before: Map<string, Before>,
  folder: string,
  report: InstallReport
) {
  const served = rules.groups.flatMap((g) => g.rules);
  expect(report.failure).toBeUndefined();
  expect(report.notInstalled).toEqual([]);
  expect([...fake.folders].filter(([uid, t]) => t === TITLE && !fake.parents.has(uid))).toHaveLength(1);
  expect(report.folder?.uid).toBe(folder);
  for (const r of served) {
    const stored = fake.rules.get(r.uid);
    const was = before.get(r.uid);
    if (was === 'file') {
      expect(stored).toEqual({ rule: stale(r, folder), provenance: 'file' });
      continue;
    }
    expect(stored?.rule).toEqual({ ...r, folderUID: folder });
    // A rule marked "api" stays so where Grafana cannot change that; every other one is editable.
    expect(stored?.provenance).toBe(was === 'api' && !fake.behaviour.apiToNone ? 'api' : '');
  }
  const with_ = (f: (b: Before) => boolean) =>
    served
      .filter((r) => f(before.get(r.uid)!))
      .map((r) => r.uid)
      .sort();
  expect(all(report, 'created')).toEqual(with_((b) => b === 'absent'));
  expect(all(report, 'updated')).toEqual(with_((b) => b === '' || b === 'api'));
  expect(all(report, 'fromFile')).toEqual(with_((b) => b === 'file'));
  expect(all(report, 'readOnly')).toEqual(with_((b) => b === 'api' && !fake.behaviour.apiToNone));
  // Each group's interval: the group PUT sets it; a group created rule by rule keeps Grafana's default
  // (the fake's 10 s, not the plugin's 60 s), and the report says so for every group that went in that way.
  for (const g of rules.groups) {
    const got = fake.groupIntervals.get(`${folder}/${g.title}`);
    const out = report.groups.find((x) => x.title === g.title);
    expect(out?.interval).toEqual(got === g.interval || out?.via !== 'rules' ? undefined : { want: g.interval, got });
    expect(got === g.interval || out?.via === 'rules').toBe(true);
  }
}

const behaviours = [MODERN, GRAFANA_9_3, NO_GROUP_PUT, CREATES_IGNORES_HEADER];
const states = ['fresh', 'existing', 'file', 'allFile'] as const;
const seeds = [1, 2, 3, 4, 5];
const matrix = behaviours.flatMap((b) => states.flatMap((s) => seeds.map((seed) => [b.name, s, seed, b] as const)));

describe('installRules', () => {
  it.each(matrix)(
    '%s, %s Grafana (seed %d): every rule present, ours editable, file ones untouched',
    async (_n, state, seed, b) => {
      const { fake, rules, before, folder, others } = grafana(b, state, seed);
      const report = await installRules(fake, rules);
      expectInstalled(fake, rules, before, folder, report);
      others.forEach((o) => expect(fake.rules.get(o.rule.uid)).toEqual(o));
      // The folder is created only when neither its uid nor its title exists.
      expect(fake.requests.some((r) => r.method === 'POST' && r.url === '/api/folders')).toBe(state === 'fresh');
      expect(report.folder?.how).toBe(
        { fresh: 'created', existing: 'found', file: 'foundByTitle', allFile: 'foundByTitle' }[state]
      );
      // Installing again changes nothing but reports every rule of ours as updated.
      const again = await installRules(fake, rules);
      const now = new Map([...before].map(([uid, was]) => [uid, was === 'absent' ? ('' as Before) : was]));
      expectInstalled(fake, rules, now, folder, again);
      others.forEach((o) => expect(fake.rules.get(o.rule.uid)).toEqual(o));
    }
  );

  it('installs a fresh modern Grafana with one group PUT per group', async () => {
    const { fake, rules } = grafana(MODERN, 'fresh', 1);
    const report = await installRules(fake, rules);
    expect(report.groups.map((g) => g.via)).toEqual(rules.groups.map(() => 'group'));
    const writes = fake.requests.filter((r) => r.method !== 'GET');
    expect(writes.map((r) => `${r.method} ${r.url}`)).toEqual([
      'POST /api/folders',
      ...rules.groups.map((g) => `PUT /api/v1/provisioning/folder/inferscope-alerts/rule-groups/${g.title}`),
    ]);
    expect(writes.every((r) => r.url === '/api/folders' || r.headers?.['X-Disable-Provenance'] === 'true')).toBe(true);
  });

  // A Grafana that cannot create through the group PUT, or ignores X-Disable-Provenance there, gets one
  // group PUT (the first group's, which shows it), and none on a reinstall, where every rule exists.
  it.each([GRAFANA_9_3, CREATES_IGNORES_HEADER].map((b) => [b.name, b] as const))(
    '%s: one group PUT, then rule by rule',
    async (_name, b) => {
      const { fake, rules } = grafana(b, 'fresh', 1);
      const groupPuts = () => fake.requests.filter((r) => r.method === 'PUT' && r.url.includes('/rule-groups/')).length;
      const first = await installRules(fake, rules);
      expect(groupPuts()).toBe(1);
      expect(first.groups.map((g) => g.via)).toEqual(
        rules.groups.map((_, i) => (i === 0 ? (b.groupPutCreates ? 'group' : 'rules') : 'rules'))
      );
      await installRules(fake, rules);
      expect(groupPuts()).toBe(1);
    }
  );

  it("a group holding file rules gets its other rules one by one into the file's folder", async () => {
    const { fake, rules, before } = grafana(MODERN, 'file', 3);
    const report = await installRules(fake, rules);
    for (const g of report.groups) {
      const mixed = g.fromFile.length > 0 && g.created.length > 0;
      if (mixed) {
        expect(g.via).toBe('rules');
      }
    }
    expect([...before.values()].filter((b) => b === 'file').length).toBeGreaterThan(0);
    expect(report.groups.some((g) => g.fromFile.length > 0 && g.created.length > 0)).toBe(true);
  });

  it('uses the file folder when creating ours answers 409 (the title is taken, and search did not show it yet)', async () => {
    const { fake, rules } = grafana(MODERN, 'fresh', 1);
    let searches = 0;
    fake.intercept = (req) => {
      if (req.url.startsWith('/api/search') && searches++ === 0) {
        fake.folders.set(FILE_FOLDER, TITLE); // the file provisioner creates it meanwhile
        return { status: 200, data: [] };
      }
      return undefined;
    };
    const report = await installRules(fake, rules);
    expect(report.failure).toBeUndefined();
    expect(report.folder).toEqual({ uid: FILE_FOLDER, title: TITLE, how: 'foundByTitle' });
    expect([...fake.rules.values()].every((s) => s.rule.folderUID === FILE_FOLDER && s.provenance === '')).toBe(true);
  });

  it('does not take a nested folder of the same title for ours', async () => {
    const { fake, rules } = grafana(MODERN, 'fresh', 1);
    fake.folders.set('team-alerts', TITLE);
    fake.parents.set('team-alerts', 'inferscope');
    const report = await installRules(fake, rules);
    expect(report.folder).toEqual({ ...rules.folder, how: 'created' });
    expect([...fake.rules.values()].every((s) => s.rule.folderUID === rules.folder.uid)).toBe(true);
  });

  // Every write (folder, group or rule) of a fresh install fails once in turn: the report must list
  // exactly what Grafana now holds and what it does not, and installing again completes it.
  for (const b of [MODERN, GRAFANA_9_3, CREATES_IGNORES_HEADER]) {
    const clean = grafana(b, 'fresh', 1);
    const nWrites = () => clean.fake.requests.filter((r) => r.method !== 'GET').length;
    it(`${b.name}: a failure at any write is reported with what was done and what was not`, async () => {
      await installRules(clean.fake, clean.rules);
      expect(nWrites()).toBeGreaterThan(3);
      for (let k = 0; k < nWrites(); k++) {
        const { fake, rules, before, folder } = grafana(b, 'fresh', 1);
        let writes = 0;
        fake.intercept = (req) =>
          req.method !== 'GET' && writes++ === k ? { status: 403, data: { message: 'permission denied' } } : undefined;
        const report = await installRules(fake, rules);
        expect(report.failure?.status).toBe(403);
        const done = [...all(report, 'created'), ...all(report, 'updated')].sort();
        expect(done).toEqual([...fake.rules.keys()].sort());
        const readOnly = [...fake.rules.values()].filter((s) => s.provenance !== '').map((s) => s.rule.uid);
        expect(all(report, 'readOnly')).toEqual(readOnly.sort());
        const served = rules.groups.flatMap((g) => g.rules.map((r) => r.uid));
        expect(uids(report.notInstalled)).toEqual(served.filter((u) => !done.includes(u)).sort());
        expect(report.notInstalled.length).toBeGreaterThan(0);
        const text = describeReport(report);
        expect(text.severity).toBe('error');
        expect(text.title).toBe(done.length ? 'Alert rules partly installed' : 'Alert rules not installed');
        expect(text.lines.join('\n')).toContain(`Not installed: ${report.notInstalled.length} rule`);
        expect(text.lines.join('\n')).toContain('permission to create folders and alert rules');
        fake.intercept = undefined;
        const now = new Map([...before].map(([uid]) => [uid, (fake.rules.get(uid)?.provenance ?? 'absent') as Before]));
        expectInstalled(fake, rules, now, folder, await installRules(fake, rules));
      }
    });
  }
});

describe('installRules on a body that is not the rules', () => {
  const folder = { uid: 'f', title: 'F' };
  it.each([
    ['a proxy page', '<html><body>Sign in to the proxy</body></html>', 'a text answer: "<html><body>Sign in'],
    ['null', null, 'null instead of an object'],
    ['an older backend', { rules: [] }, 'no folder uid and title'],
    ['groups not a list', { folder, groups: 'x' }, 'no list of groups'],
    ['a rule without a uid', { folder, groups: [{ title: 'g', rules: [{ title: 't', ruleGroup: 'g' }] }] }, '(g)'],
  ])('%s: a failure of reading the rules, nothing sent', async (_name, body, detail) => {
    const fake = new FakeGrafana(MODERN);
    const report = await installRules(fake, body as unknown as ApiAlertRules);
    expect(report.failure?.step).toBe('Reading the rules from the data source');
    expect(report.failure?.detail).toContain("not the plugin's rules (");
    expect(report.failure?.detail).toContain(detail);
    expect(fake.requests).toEqual([]);
    expect(describeReport(report)).toMatchObject({ severity: 'error', title: 'Alert rules not installed' });
  });
});

describe('describeReport', () => {
  it('tells how to set the interval of a group Grafana 9.3 created rule by rule with its default', async () => {
    const { fake, rules } = grafana(GRAFANA_9_3, 'fresh', 1);
    const report = await installRules(fake, rules);
    const text = describeReport(report);
    expect(text.severity).toBe('warning');
    expect(text.title).toBe(`Alert rules installed, ${rules.groups.length} groups to check`);
    for (const g of rules.groups) {
      expect(text.lines).toContain(
        `${g.title} evaluates every 10 s, not every ${g.interval} s: the rules went in one at a time, so the group took ` +
          "Grafana's default interval, and setting it through the API takes a rule-group request, which Grafana 9.3 " +
          `answers by making every rule of the group read-only. Set it in the UI: Alerting → Alert rules → the group ${g.title} ` +
          `in the folder ${TITLE} → Edit → Evaluation interval ${g.interval}s.`
      );
    }
    // A Grafana whose default is the plugin's interval has nothing to report.
    const same = grafana(GRAFANA_9_3, 'fresh', 1).fake;
    same.defaultInterval = 60;
    expect(describeReport(await installRules(same, rules))).toMatchObject({ severity: 'success' });
  });

  it('says when the interval could not be read back', async () => {
    const { fake, rules } = grafana(NO_GROUP_PUT, 'fresh', 1);
    // The group reads before any rule is created (whether it holds rules of others) answer; those after fail.
    let created = false;
    fake.intercept = (req) => {
      created ||= req.method === 'POST' && req.url.includes('/alert-rules');
      return created && req.method === 'GET' && req.url.includes('/rule-groups/')
        ? { status: 500, data: { message: 'boom' } }
        : undefined;
    };
    const report = await installRules(fake, rules);
    expect(report.failure).toBeUndefined();
    const text = describeReport(report);
    expect(text.lines).toContain(
      `The interval of ${rules.groups[0].title} could not be read back (HTTP 500: boom): check in the UI that it evaluates every ${rules.groups[0].interval} s.`
    );
  });

  it('names per group what was created, updated and left alone', async () => {
    const { fake, rules, before } = grafana(MODERN, 'file', 2);
    const text = describeReport(await installRules(fake, rules));
    expect(text.severity).toBe('success');
    const fromFile = rules.groups.flatMap((g) => g.rules).filter((r) => before.get(r.uid) === 'file');
    const created = rules.groups.flatMap((g) => g.rules).length - fromFile.length;
    expect(text.lines[0]).toBe(
      `Installed ${created} alert rule${created === 1 ? '' : 's'} in the folder ${TITLE}, querying this data source: ${created} created, 0 updated.`
    );
    expect(text.lines[1]).toBe(
      `Used the existing folder ${TITLE} (uid ${FILE_FOLDER}), found by its title: a provisioning file's or one made by hand.`
    );
    for (const g of rules.groups) {
      const line = text.lines.find((l) => l.startsWith(`${g.title}: `)) ?? '';
      for (const r of g.rules) {
        expect(line).toContain(r.title);
      }
      const n = g.rules.filter((r) => before.get(r.uid) === 'file').length;
      expect(line.includes(`left alone ${n} rule`)).toBe(n > 0);
    }
    expect(text.lines.join('\n')).toContain('edit the provisioning file');
  });

  it("keeps someone's own rule in a group, going in rule by rule, and says so", async () => {
    const { fake, rules } = grafana(MODERN, 'fresh', 1);
    const g = rules.groups[1];
    fake.folders.set(rules.folder.uid, TITLE);
    const own = { ...g.rules[0], uid: 'own', title: 'My own rule', folderUID: rules.folder.uid };
    fake.rules.set(own.uid, { rule: own, provenance: '' });
    const report = await installRules(fake, rules);
    expect(fake.rules.get('own')).toEqual({ rule: own, provenance: '' });
    expect(report.groups.map((x) => x.via)).toEqual(rules.groups.map((x) => (x === g ? 'rules' : 'group')));
    const line = describeReport(report).lines.find((l) => l.startsWith(`${g.title}: `));
    expect(line).toBe(
      `${g.title}: created ${g.rules.length} rules (${g.rules.map((r) => r.title).join(', ')}); kept 1 other rule of the group (My own rule), one rule at a time.`
    );
  });

  it('warns when every rule comes from the file and nothing was installed', async () => {
    const { fake, rules } = grafana(MODERN, 'allFile', 1);
    const text = describeReport(await installRules(fake, rules));
    expect(text).toMatchObject({ severity: 'warning', title: 'Alert rules left as they are' });
    expect(fake.requests.filter((r) => r.method !== 'GET')).toEqual([]);
  });

  it('names the rules that stay read-only on Grafana 9.3 and how to fix them', async () => {
    const { fake, rules, before } = grafana(GRAFANA_9_3, 'existing', 4);
    const text = describeReport(await installRules(fake, rules));
    const api = rules.groups.flatMap((g) => g.rules).filter((r) => before.get(r.uid) === 'api');
    expect(api.length).toBeGreaterThan(0);
    expect(text.severity).toBe('warning');
    expect(text.title).toBe(`Alert rules installed, ${api.length} read-only`);
    const line = text.lines.find((l) => l.includes('stay read-only')) ?? '';
    api.forEach((r) => expect(line).toContain(r.title));
    expect(line).toContain('DELETE /api/v1/provisioning/alert-rules/<uid>');
  });
});
