/**
 * Installs the plugin's alert rules through Grafana's HTTP API on every Grafana that has the alerting
 * provisioning API (9.3 and newer), on a fresh Grafana and over an earlier install or the rules'
 * provisioning file. Pure: it talks to Grafana only through `GrafanaApi`, so its tests run it against
 * a stateful model of each version's behaviour.
 *
 * What the versions do differently (Grafana's provisioning API documentation and its issues):
 * - `PUT …/folder/<uid>/rule-groups/<group>` with a whole group creates the rules it does not know on
 *   current versions; 9.3 only updates rules whose uid exists and answers 500 "could not find alert
 *   rule" (nothing written); a Grafana without that route answers 404 or 405.
 * - `X-Disable-Provenance: true` (9.3 and newer) keeps API-written rules editable in the UI on
 *   `POST /api/v1/provisioning/alert-rules` and `PUT …/alert-rules/<uid>`; older group PUTs ignore it
 *   and mark every rule of the group "api" (read-only), and before 10.0 a rule marked "api" cannot be
 *   made editable again through the API ("cannot change provenance from 'api' to ''").
 * - Rules from a provisioning file carry provenance "file": the API refuses to change them.
 * - A file names its folder by title, so Grafana creates that folder with a uid of its own; creating
 *   ours with the same title answers 409.
 */

/** The backend's alert-rules resource with format=api (dashboards/builder's rules for this data source). */
export interface ApiAlertRules {
  folder: { uid: string; title: string };
  groups: ApiRuleGroup[];
}

export interface ApiRuleGroup {
  title: string;
  folderUid: string;
  interval?: number;
  rules: ApiRule[];
}

/** The fields of a provisioned alert rule the installer reads; the rest goes to Grafana as it is. */
export interface ApiRule {
  uid: string;
  title: string;
  folderUID: string;
  ruleGroup: string;
  [field: string]: unknown;
}

export interface ApiRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  data?: unknown;
  headers?: Record<string, string>;
}

/** Grafana's answer: any HTTP status resolves; only a request that got no answer rejects. */
export interface ApiAnswer {
  status: number;
  data: unknown;
}

export interface GrafanaApi {
  send(req: ApiRequest): Promise<ApiAnswer>;
}

export interface RuleRef {
  uid: string;
  title: string;
  group: string;
}

export interface GroupReport {
  title: string;
  /** "group": one rule-group PUT; "rules": one POST/PUT per rule (Grafana cannot create through the group PUT, or the group holds file rules). */
  via?: 'group' | 'rules';
  created: RuleRef[];
  updated: RuleRef[];
  /** Provisioned from a file (provenance "file"): the API cannot change them, so they are left as they are. */
  fromFile: RuleRef[];
  /** Installed, but Grafana keeps them read-only (provenance "api") and refused to make them editable. */
  readOnly: RuleRef[];
  /** Rules in the group that are not the plugin's (added by hand): kept, so the group went in rule by rule. */
  others: string[];
  /**
   * Set after rules went in one at a time when the group does not evaluate at the plugin's interval (a new
   * group gets Grafana's configured default): `got` is Grafana's, undefined when it could not be read back.
   */
  interval?: { want: number; got?: number; detail?: string };
}

export interface InstallReport {
  folder?: { uid: string; title: string; how: 'found' | 'foundByTitle' | 'created' };
  groups: GroupReport[];
  /** Set when the install stopped: what failed; `notInstalled` lists the rules it did not get to. */
  failure?: { step: string; status?: number; detail: string };
  notInstalled: RuleRef[];
}

const DISABLE_PROVENANCE = { 'X-Disable-Provenance': 'true' };
const RULES = '/api/v1/provisioning/alert-rules';
const ruleUrl = (r: ApiRule) => `${RULES}/${encodeURIComponent(r.uid)}`;
const groupUrl = (g: ApiRuleGroup) =>
  `/api/v1/provisioning/folder/${encodeURIComponent(g.folderUid)}/rule-groups/${encodeURIComponent(g.title)}`;

type Existing = { provenance: string } | undefined;

/** A step that failed, with Grafana's answer; caught by installRules and put into the report. */
class StepError extends Error {
  constructor(
    readonly step: string,
    readonly status: number | undefined,
    readonly detail: string
  ) {
    super(`${step} failed${status ? ` (HTTP ${status})` : ''}: ${detail}`);
  }
}

export function answerText(a: ApiAnswer): string {
  const data = a.data as { message?: string; error?: string } | string | undefined;
  const text = (typeof data === 'string' ? data : data?.message || data?.error) || 'no message';
  return a.status === 403
    ? `${text}. Installing needs the permission to create folders and alert rules (an Editor or Admin).`
    : text;
}

async function expect2xx(api: GrafanaApi, step: string, req: ApiRequest): Promise<ApiAnswer> {
  const a = await ask(api, step, req);
  if (a.status >= 300) {
    throw new StepError(step, a.status, answerText(a));
  }
  return a;
}

async function ask(api: GrafanaApi, step: string, req: ApiRequest): Promise<ApiAnswer> {
  try {
    return await api.send(req);
  } catch (e) {
    throw new StepError(step, undefined, e instanceof Error ? e.message : String(e));
  }
}

/** The folder by uid, else by exact title (a file-provisioned one has its own uid), else a new one. */
async function resolveFolder(
  api: GrafanaApi,
  want: { uid: string; title: string }
): Promise<NonNullable<InstallReport['folder']>> {
  const byUid = await ask(api, 'Looking up the folder', {
    method: 'GET',
    url: `/api/folders/${encodeURIComponent(want.uid)}`,
  });
  if (byUid.status < 300) {
    return { ...want, how: 'found' };
  }
  if (byUid.status !== 404) {
    throw new StepError('Looking up the folder', byUid.status, answerText(byUid));
  }
  const byTitle = async () => {
    const a = await expect2xx(api, `Searching for the folder ${want.title}`, {
      method: 'GET',
      url: `/api/search?type=dash-folder&query=${encodeURIComponent(want.title)}`,
    });
    // Search matches words anywhere in the title and finds nested folders too (with their parent's
    // folderUid): ours is the top-level one of the same title, where the file provisioner makes it.
    const hits = Array.isArray(a.data) ? (a.data as Array<{ uid?: string; title?: string; folderUid?: string }>) : [];
    const hit = hits.find((f) => f.title === want.title && f.uid && !f.folderUid);
    return hit ? { uid: hit.uid!, title: want.title, how: 'foundByTitle' as const } : undefined;
  };
  const found = await byTitle();
  if (found) {
    return found;
  }
  const step = `Creating the folder ${want.title}`;
  const created = await ask(api, step, { method: 'POST', url: '/api/folders', data: want });
  if (created.status < 300) {
    return { ...want, how: 'created' };
  }
  // 409: the title exists after all (created meanwhile, or hidden from search): use it if it shows now.
  const again = created.status === 409 ? await byTitle() : undefined;
  if (again) {
    return again;
  }
  throw new StepError(step, created.status, answerText(created));
}

async function readRule(api: GrafanaApi, r: ApiRule): Promise<Existing> {
  const step = `Reading the existing rule ${r.title}`;
  const a = await ask(api, step, { method: 'GET', url: ruleUrl(r) });
  if (a.status === 404) {
    return undefined;
  }
  if (a.status >= 300) {
    throw new StepError(step, a.status, answerText(a));
  }
  return { provenance: String((a.data as { provenance?: unknown } | undefined)?.provenance ?? '') };
}

/** A group PUT that cannot create rules: 9.3's 500, or a Grafana without the whole-group PUT (404/405). */
function groupPutCannotCreate(a: ApiAnswer): boolean {
  return a.status === 404 || a.status === 405 || (a.status === 500 && /could not find alert rule/i.test(answerText(a)));
}

/** The titles of the rules in Grafana's copy of the group that are not in ours (none when the group does not exist). */
async function otherRules(api: GrafanaApi, group: ApiRuleGroup): Promise<string[]> {
  const step = `Reading the rule group ${group.title}`;
  const a = await ask(api, step, { method: 'GET', url: groupUrl(group) });
  if (a.status === 404) {
    return [];
  }
  if (a.status >= 300) {
    throw new StepError(step, a.status, answerText(a));
  }
  const theirs = (a.data as { rules?: Array<{ uid?: string; title?: string }> } | undefined)?.rules ?? [];
  return theirs.filter((r) => !group.rules.some((o) => o.uid === r.uid)).map((r) => String(r.title ?? r.uid));
}

const ref = (r: ApiRule): RuleRef => ({ uid: r.uid, title: r.title, group: r.ruleGroup });

const READING = 'Reading the rules from the data source';

/** What is wrong with a body that should be the backend's rules (undefined: nothing), in a few words. */
function notRules(data: unknown): string | undefined {
  const d = data as Partial<ApiAlertRules> | undefined;
  const isText = (v: unknown) => typeof v === 'string' && v !== '';
  if (typeof data === 'string') {
    const text = data.trim().replace(/\s+/g, ' ');
    return `a text answer: "${text.length > 60 ? text.slice(0, 60) + '…' : text}"`;
  }
  if (typeof d !== 'object' || d === null) {
    return `${d === null ? 'null' : typeof d} instead of an object`;
  }
  if (!isText(d.folder?.uid) || !isText(d.folder?.title)) {
    return 'no folder uid and title';
  }
  if (!Array.isArray(d.groups)) {
    return 'no list of groups';
  }
  const bad = d.groups.find(
    (g) =>
      !isText(g?.title) ||
      !Array.isArray(g.rules) ||
      !g.rules.every((r) => isText(r?.uid) && isText(r?.title) && isText(r?.ruleGroup))
  );
  return bad ? `a group without a title or rules with uid, title and group (${String(bad?.title)})` : undefined;
}

/**
 * Installs `rules` (the backend's format=api rendering) and reports what it created, updated and left
 * alone. It never rejects: a failure midway is in the report's `failure`, with the rules not installed;
 * a body that is not the rules (a proxy's HTML page, an older backend) is a failure of reading them.
 */
export async function installRules(api: GrafanaApi, rules: ApiAlertRules): Promise<InstallReport> {
  const report: InstallReport = { groups: [], notInstalled: [] };
  const wrong = notRules(rules);
  if (wrong) {
    report.failure = {
      step: READING,
      detail: `not the plugin's rules (${wrong}): check that the data source's backend runs this plugin version and that no proxy answers for it`,
    };
    return report;
  }
  const pending = new Set(rules.groups.flatMap((g) => g.rules.map((r) => r.uid)));
  try {
    report.folder = await resolveFolder(api, rules.folder);
    const folderUid = report.folder.uid;
    // Once a group PUT showed it cannot create rules or keep them editable, every later group goes rule by rule.
    let groupPut = true;
    for (const g of rules.groups) {
      const group: ApiRuleGroup = {
        ...g,
        folderUid,
        rules: g.rules.map((r) => ({ ...r, folderUID: folderUid })),
      };
      const out: GroupReport = { title: g.title, created: [], updated: [], fromFile: [], readOnly: [], others: [] };
      report.groups.push(out);
      const existing = new Map<string, Existing>();
      for (const r of group.rules) {
        existing.set(r.uid, await readRule(api, r));
      }
      const mine = group.rules.filter((r) => existing.get(r.uid)?.provenance !== 'file');
      for (const r of group.rules.filter((r) => !mine.includes(r))) {
        out.fromFile.push(ref(r));
        pending.delete(r.uid);
      }
      if (mine.length === 0) {
        continue;
      }
      // A group PUT replaces the whole group: the file rules in it, which the API may not change, and
      // rules that are not ours, which it would delete, make the group go in rule by rule. It is also
      // tried only where it has a rule to create: a Grafana that cannot create answers without writing,
      // while on rules that all exist an old one would succeed and make them read-only.
      let tryGroupPut = groupPut && out.fromFile.length === 0 && mine.some((r) => existing.get(r.uid) === undefined);
      if (tryGroupPut) {
        out.others = await otherRules(api, group);
        tryGroupPut = out.others.length === 0;
      }
      if (tryGroupPut) {
        const step = `Installing the rule group ${g.title}`;
        const a = await ask(api, step, {
          method: 'PUT',
          url: groupUrl(group),
          data: group,
          headers: DISABLE_PROVENANCE,
        });
        if (a.status < 300) {
          out.via = 'group';
          // A Grafana that ignores X-Disable-Provenance on the group PUT gets no more of them.
          groupPut = await settle(api, mine, existing, out, pending);
          continue;
        }
        if (!groupPutCannotCreate(a)) {
          throw new StepError(step, a.status, answerText(a));
        }
        groupPut = false;
      }
      out.via = 'rules';
      for (const r of mine) {
        if (existing.get(r.uid) === undefined) {
          await expect2xx(api, `Creating the rule ${r.title} (group ${g.title})`, {
            method: 'POST',
            url: RULES,
            data: r,
            headers: DISABLE_PROVENANCE,
          });
          out.created.push(ref(r));
        } else {
          await updateRule(api, r, out);
          out.updated.push(ref(r));
        }
        pending.delete(r.uid);
      }
      out.interval = await intervalDiffers(api, group);
    }
  } catch (e) {
    const err = e instanceof StepError ? e : new StepError('Installing', undefined, String(e));
    report.failure = { step: err.step, status: err.status, detail: err.detail };
  }
  report.notInstalled = rules.groups.flatMap((g) => g.rules.filter((r) => pending.has(r.uid)).map(ref));
  return report;
}

/**
 * After rules went in one at a time: the group's interval when it is not the plugin's. Setting it takes a
 * group PUT, which Grafana 9.3 answers by marking the rules read-only, so it is reported, not set. A failed
 * read-back does not stop the install: the rules are in.
 */
async function intervalDiffers(api: GrafanaApi, group: ApiRuleGroup): Promise<GroupReport['interval']> {
  if (group.interval === undefined) {
    return undefined;
  }
  const a = await ask(api, `Reading the rule group ${group.title}`, { method: 'GET', url: groupUrl(group) });
  if (a.status >= 300) {
    return { want: group.interval, detail: `HTTP ${a.status}: ${answerText(a)}` };
  }
  const got = (a.data as { interval?: unknown } | undefined)?.interval;
  if (typeof got !== 'number') {
    return { want: group.interval, detail: 'the answer has no interval' };
  }
  return got === group.interval ? undefined : { want: group.interval, got };
}

/**
 * PUTs a rule editable; resolves false where Grafana refuses because the rule is marked read-only
 * and it cannot change that (before 10.0: "cannot change provenance from 'api' to ''").
 */
async function putEditable(api: GrafanaApi, step: string, r: ApiRule): Promise<boolean> {
  const a = await ask(api, step, { method: 'PUT', url: ruleUrl(r), data: r, headers: DISABLE_PROVENANCE });
  if (a.status < 300) {
    return true;
  }
  if (!/provenance/i.test(answerText(a))) {
    throw new StepError(step, a.status, answerText(a));
  }
  return false;
}

/** Updates an existing rule, editable, or where Grafana refuses that, as it is (read-only). */
async function updateRule(api: GrafanaApi, r: ApiRule, out: GroupReport) {
  const step = `Updating the rule ${r.title} (group ${r.ruleGroup})`;
  if (!(await putEditable(api, step, r))) {
    await expect2xx(api, step, { method: 'PUT', url: ruleUrl(r), data: r });
    out.readOnly.push(ref(r));
  }
}

/**
 * After a group PUT: reads each rule back, as the answer does not say whether Grafana kept the rules
 * editable. A Grafana that ignores X-Disable-Provenance there marked them "api"; where it also refuses
 * to undo that with a rule PUT, a rule that was not read-only before is deleted and created editable
 * (losing only its current alert state), and one that was stays read-only. Each step updates the
 * report first, so a failure leaves it true. Resolves to whether the PUT kept every rule editable.
 */
async function settle(
  api: GrafanaApi,
  mine: ApiRule[],
  before: Map<string, Existing>,
  out: GroupReport,
  pending: Set<string>
): Promise<boolean> {
  // The PUT wrote every rule: say so before the read-backs and repairs that may fail.
  for (const r of mine) {
    (before.get(r.uid) === undefined ? out.created : out.updated).push(ref(r));
    pending.delete(r.uid);
  }
  const marked: ApiRule[] = [];
  for (const r of mine) {
    const now = await readRule(api, r);
    if (now === undefined) {
      throw new StepError(
        `Installing the rule group ${r.ruleGroup}`,
        undefined,
        `Grafana answered OK but has no rule ${r.title}`
      );
    }
    if (now.provenance !== '') {
      marked.push(r);
      out.readOnly.push(ref(r));
    }
  }
  const drop = (list: RuleRef[], r: ApiRule) => {
    const i = list.findIndex((x) => x.uid === r.uid);
    if (i >= 0) {
      list.splice(i, 1);
    }
  };
  for (const r of marked) {
    const step = `Making the rule ${r.title} (group ${r.ruleGroup}) editable`;
    if (await putEditable(api, step, r)) {
      drop(out.readOnly, r);
      continue;
    }
    if (before.get(r.uid)?.provenance === 'api') {
      continue;
    }
    const list = before.get(r.uid) === undefined ? out.created : out.updated;
    await expect2xx(api, step, { method: 'DELETE', url: ruleUrl(r) });
    drop(list, r);
    drop(out.readOnly, r);
    pending.add(r.uid);
    await expect2xx(api, step, { method: 'POST', url: RULES, data: r, headers: DISABLE_PROVENANCE });
    list.push(ref(r));
    pending.delete(r.uid);
  }
  return marked.length === 0;
}

export interface ReportText {
  severity: 'success' | 'warning' | 'error';
  title: string;
  lines: string[];
}

const names = (rs: RuleRef[]) => rs.map((r) => r.title).join(', ');
const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

/** The report in words: per group what was created, updated and left alone, and what to do about the rest. */
export function describeReport(report: InstallReport): ReportText {
  const all = (k: 'created' | 'updated' | 'fromFile' | 'readOnly') => report.groups.flatMap((g) => g[k]);
  const installed = all('created').length + all('updated').length;
  const lines: string[] = [];
  const f = report.folder;
  if (f) {
    lines.push(
      f.how === 'created'
        ? `Created the folder ${f.title} (uid ${f.uid}).`
        : f.how === 'found'
          ? `Used the folder ${f.title} (uid ${f.uid}).`
          : `Used the existing folder ${f.title} (uid ${f.uid}), found by its title: a provisioning file's or one made by hand.`
    );
  }
  for (const g of report.groups) {
    const parts = [
      g.created.length && `created ${count(g.created.length, 'rule')} (${names(g.created)})`,
      g.updated.length && `updated ${count(g.updated.length, 'rule')} (${names(g.updated)})`,
      g.fromFile.length &&
        `left alone ${count(g.fromFile.length, 'rule')} provisioned from a file (${names(g.fromFile)})`,
      g.others.length && `kept ${count(g.others.length, 'other rule')} of the group (${g.others.join(', ')})`,
    ].filter(Boolean);
    const via = g.via === 'group' ? ', with one rule-group request' : g.via === 'rules' ? ', one rule at a time' : '';
    lines.push(`${g.title}: ${parts.join('; ') || 'nothing done'}${parts.length && g.via ? via : ''}.`);
  }
  const intervals = report.groups.filter((g) => g.interval);
  for (const g of intervals) {
    const { want, got, detail } = g.interval!;
    lines.push(
      got === undefined
        ? `The interval of ${g.title} could not be read back (${detail}): check in the UI that it evaluates every ${want} s.`
        : `${g.title} evaluates every ${got} s, not every ${want} s: the rules went in one at a time, so the group took ` +
            "Grafana's default interval, and setting it through the API takes a rule-group request, which Grafana 9.3 " +
            'answers by making every rule of the group read-only. Set it in the UI: Alerting → Alert rules → the group ' +
            `${g.title} in the folder ${f?.title ?? ''} → Edit → Evaluation interval ${want}s.`
    );
  }
  const readOnly = all('readOnly');
  if (readOnly.length) {
    lines.push(
      `${count(readOnly.length, 'rule')} stay read-only (${names(readOnly)}): the API marked them so (provenance "api"), ` +
        'and this Grafana (before 10.0) cannot make them editable again. To edit them in the UI, delete them with ' +
        'DELETE /api/v1/provisioning/alert-rules/<uid> and install again.'
    );
  }
  if (all('fromFile').length) {
    lines.push(
      'Rules provisioned from a file cannot be changed through the API or the UI: edit the provisioning file ' +
        '(Download rules gives the current one), or remove it, restart Grafana and install again to have them editable.'
    );
  }
  if (report.failure) {
    const { step, status, detail } = report.failure;
    lines.push(`Stopped: ${step} failed${status ? ` (HTTP ${status})` : ''}: ${detail}`);
    if (report.notInstalled.length) {
      lines.push(`Not installed: ${count(report.notInstalled.length, 'rule')} (${names(report.notInstalled)}).`);
    }
    lines.push(
      installed
        ? 'What is listed above as created or updated stays. Fix the cause and click Install again: it updates the rules already there and creates the rest.'
        : 'Nothing was installed. Fix the cause and click Install again.'
    );
    return {
      severity: 'error',
      title: installed ? 'Alert rules partly installed' : 'Alert rules not installed',
      lines,
    };
  }
  if (installed === 0) {
    return { severity: 'warning', title: 'Alert rules left as they are', lines };
  }
  lines.unshift(
    `Installed ${count(installed, 'alert rule')} in the folder ${f?.title}, querying this data source: ` +
      `${all('created').length} created, ${all('updated').length} updated.`
  );
  if (readOnly.length) {
    return { severity: 'warning', title: `Alert rules installed, ${readOnly.length} read-only`, lines };
  }
  return intervals.length
    ? { severity: 'warning', title: `Alert rules installed, ${count(intervals.length, 'group')} to check`, lines }
    : { severity: 'success', title: 'Alert rules installed', lines };
}
