import { ApiAnswer, ApiRequest, ApiRule, GrafanaApi } from './alertRulesInstall';

/**
 * For tests: a stateful model of the Grafana HTTP API the installer uses (folders, search, the
 * alerting provisioning API's rules and rule groups, provenance), with the behaviours that differ
 * between versions as documented by Grafana (see alertRulesInstall.ts). Tests check its final state.
 */
export interface GrafanaBehaviour {
  name: string;
  /** The whole-group PUT exists (9.1 and newer). */
  groupPut: boolean;
  /** The group PUT creates rules whose uid does not exist (after 9.3); 9.3 answers 500 "could not find alert rule". */
  groupPutCreates: boolean;
  /** The group PUT honours X-Disable-Provenance; 9.3's marks every rule "api". */
  groupPutDisablesProvenance: boolean;
  /** A rule marked "api" may become editable (""): 10.0 and newer. */
  apiToNone: boolean;
}

export const MODERN: GrafanaBehaviour = {
  name: 'Grafana 11.6+',
  groupPut: true,
  groupPutCreates: true,
  groupPutDisablesProvenance: true,
  apiToNone: true,
};

/** A Grafana whose group PUT creates rules but, like 9.3's, ignores X-Disable-Provenance (as before 10.0). */
export const CREATES_IGNORES_HEADER: GrafanaBehaviour = {
  ...MODERN,
  name: 'group PUT creates, ignores X-Disable-Provenance',
  groupPutDisablesProvenance: false,
  apiToNone: false,
};

export const GRAFANA_9_3: GrafanaBehaviour = {
  name: 'Grafana 9.3',
  groupPut: true,
  groupPutCreates: false,
  groupPutDisablesProvenance: false,
  apiToNone: false,
};

/** A Grafana whose group PUT takes only the interval, not rules: the rules route answers 404. */
export const NO_GROUP_PUT: GrafanaBehaviour = { ...GRAFANA_9_3, name: 'no whole-group PUT', groupPut: false };

export type Provenance = '' | 'api' | 'file';

export interface StoredRule {
  rule: ApiRule;
  provenance: Provenance;
}

const json = (status: number, data: unknown): ApiAnswer => ({ status, data });
const message = (status: number, text: string) => json(status, { message: text });

export class FakeGrafana implements GrafanaApi {
  readonly folders = new Map<string, string>(); // uid → title
  readonly parents = new Map<string, string>(); // nested folder uid → its parent's uid
  readonly rules = new Map<string, StoredRule>(); // uid → rule
  readonly groupIntervals = new Map<string, number>(); // folder uid/group → seconds
  /** The interval a group created by a rule POST gets: Grafana's configured default, which need not be the plugin's 60 s. */
  defaultInterval = 10;
  readonly requests: ApiRequest[] = [];
  /** Answers a request instead of the model when it returns an answer (to break a step). */
  intercept?: (req: ApiRequest) => ApiAnswer | undefined;

  constructor(readonly behaviour: GrafanaBehaviour) {}

  async send(req: ApiRequest): Promise<ApiAnswer> {
    this.requests.push(req);
    return this.intercept?.(req) ?? this.handle(req);
  }

  private handle(req: ApiRequest): ApiAnswer {
    const u = new URL(req.url, 'http://grafana.invalid');
    const path = u.pathname.split('/').map(decodeURIComponent);
    const route = `${req.method} ${u.pathname}`;
    const disable = Object.entries(req.headers ?? {}).some(
      ([k, v]) => k.toLowerCase() === 'x-disable-provenance' && v !== ''
    );
    if (route === 'GET /api/search' && u.searchParams.get('type') === 'dash-folder') {
      const q = (u.searchParams.get('query') ?? '').toLowerCase();
      const hits = [...this.folders].filter(([, title]) => title.toLowerCase().includes(q));
      return json(
        200,
        hits.map(([uid, title]) => ({ uid, title, type: 'dash-folder', folderUid: this.parents.get(uid) }))
      );
    }
    if (req.method === 'GET' && path.length === 4 && u.pathname.startsWith('/api/folders/')) {
      const title = this.folders.get(path[3]);
      return title === undefined ? message(404, 'folder not found') : json(200, { uid: path[3], title });
    }
    if (route === 'POST /api/folders') {
      const { uid, title } = req.data as { uid: string; title: string };
      // Titles are unique among a parent's folders (here: the top level, where POST without parentUid creates).
      const siblings = [...this.folders].filter(([u]) => !this.parents.has(u)).map(([, t]) => t.toLowerCase());
      if (siblings.includes(title.toLowerCase())) {
        return message(409, 'a folder or dashboard in the general folder with the same name already exists');
      }
      if (this.folders.has(uid)) {
        return message(409, 'a folder with the same uid already exists');
      }
      this.folders.set(uid, title);
      return json(200, { uid, title });
    }
    if (u.pathname.startsWith('/api/v1/provisioning/alert-rules')) {
      return this.rule(req, path[5], disable);
    }
    if (req.method === 'GET' && path[4] === 'folder' && path[6] === 'rule-groups' && path.length === 8) {
      const rules = [...this.rules.values()]
        .filter((s) => s.rule.folderUID === path[5] && s.rule.ruleGroup === path[7])
        .map((s) => ({ ...s.rule, provenance: s.provenance }));
      const interval = this.groupIntervals.get(`${path[5]}/${path[7]}`);
      return rules.length
        ? json(200, { title: path[7], folderUid: path[5], interval, rules })
        : message(404, 'rule group not found');
    }
    if (req.method === 'PUT' && path[4] === 'folder' && path[6] === 'rule-groups' && path.length === 8) {
      return this.group(req, path[5], path[7], disable);
    }
    return message(404, 'Not found');
  }

  private rule(req: ApiRequest, uid: string | undefined, disable: boolean): ApiAnswer {
    const stored = uid === undefined ? undefined : this.rules.get(uid);
    const provenance: Provenance = disable ? '' : 'api';
    if (req.method === 'GET' && uid !== undefined) {
      return stored ? json(200, { ...stored.rule, provenance: stored.provenance }) : message(404, 'rule not found');
    }
    if (req.method === 'DELETE' && uid !== undefined) {
      if (!stored) {
        return message(404, 'rule not found');
      }
      if (stored.provenance !== '' && stored.provenance !== provenance) {
        return message(400, `cannot delete a rule with provenance '${stored.provenance}' as '${provenance}'`);
      }
      this.rules.delete(uid);
      return json(204, undefined);
    }
    const rule = req.data as ApiRule;
    if (req.method === 'POST' && uid === undefined) {
      if (this.rules.has(rule.uid)) {
        return message(409, 'a conflicting alert rule is found: rule uid must be unique');
      }
      return this.write([{ rule, provenance }]) ?? json(201, { ...rule, provenance });
    }
    if (req.method === 'PUT' && uid !== undefined) {
      if (!stored) {
        return message(404, 'could not find alert rule');
      }
      if (rule.uid !== uid) {
        return message(400, 'the rule uid in the body differs from the URL');
      }
      return this.write([{ rule, provenance }]) ?? json(200, { ...rule, provenance });
    }
    return message(405, 'method not allowed');
  }

  private group(req: ApiRequest, folderUid: string, title: string, disable: boolean): ApiAnswer {
    if (!this.behaviour.groupPut) {
      return message(404, 'Not found');
    }
    const body = req.data as { interval?: number; rules: ApiRule[] };
    const provenance: Provenance = disable && this.behaviour.groupPutDisablesProvenance ? '' : 'api';
    if (!this.behaviour.groupPutCreates && body.rules.some((r) => !this.rules.has(r.uid))) {
      return message(500, 'failed to update rule group: could not find alert rule');
    }
    if (body.rules.some((r) => r.folderUID !== folderUid || r.ruleGroup !== title)) {
      return message(400, 'a rule names another folder or group than the URL');
    }
    // The PUT replaces the group: its rules missing from the body are deleted, if their provenance allows.
    const dropped = [...this.rules.values()].filter(
      (s) =>
        s.rule.folderUID === folderUid && s.rule.ruleGroup === title && !body.rules.some((r) => r.uid === s.rule.uid)
    );
    const refused = dropped.find((s) => s.provenance !== '' && s.provenance !== provenance);
    if (refused) {
      return message(400, `cannot delete rule ${refused.rule.uid} with provenance '${refused.provenance}'`);
    }
    const failed = this.write(body.rules.map((rule) => ({ rule, provenance })));
    if (failed) {
      return failed;
    }
    dropped.forEach((s) => this.rules.delete(s.rule.uid));
    this.groupIntervals.set(`${folderUid}/${title}`, body.interval ?? 60);
    return json(200, body);
  }

  /** Writes all or none, with Grafana's checks: the folder exists, provenance may change, titles unique in a folder. */
  private write(writes: StoredRule[]): ApiAnswer | undefined {
    for (const { rule, provenance } of writes) {
      if (!this.folders.has(rule.folderUID)) {
        return message(400, `folder ${rule.folderUID} does not exist`);
      }
      const stored = this.rules.get(rule.uid);
      const from = stored?.provenance ?? '';
      const allowed =
        from === provenance || from === '' || (from === 'api' && provenance === '' && this.behaviour.apiToNone);
      if (!allowed) {
        return message(
          this.behaviour.apiToNone ? 400 : 500,
          `cannot change provenance from '${from}' to '${provenance}'`
        );
      }
      const clash = [...this.rules.values()].find(
        (s) => s.rule.uid !== rule.uid && s.rule.folderUID === rule.folderUID && s.rule.title === rule.title
      );
      if (clash) {
        return message(
          409,
          `a conflicting alert rule is found: rule title under the same organisation and folder should be unique`
        );
      }
    }
    for (const w of writes) {
      if (!this.groupIntervals.has(`${w.rule.folderUID}/${w.rule.ruleGroup}`)) {
        this.groupIntervals.set(`${w.rule.folderUID}/${w.rule.ruleGroup}`, this.defaultInterval);
      }
      this.rules.set(w.rule.uid, { rule: JSON.parse(JSON.stringify(w.rule)), provenance: w.provenance });
    }
    return undefined;
  }
}
