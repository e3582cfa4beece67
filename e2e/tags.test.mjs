// The three dashboards under a tag filter (Filters = "@aws.tag.Team" = a team) in Chromium, on
// a host of this file's own whose fleet carries seeded tags (pluginhost --tags-seed; hostile
// values: the team below holds quotes). Every panel's frames, as /api/ds/query returned them,
// are checked against the fleet file the host wrote, not against the plugin's tag lookup; a
// panel with data without the filter keeps data with it unless all it showed were other
// teams' resources; the discovery calls while a dashboard loads stay within 10 a second a region.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';

import { discoverySince, openPage, screenshot, sharedBrowser } from './browser.mjs';

const chromium = sharedBrowser();
const viewport = { width: 1600, height: 1000 };

// A seed under which one team owns the IC endpoint (its components too) and one single-model
// endpoint, and another team the third: the filter must keep some resources and drop others.
const TAGS_SEED = 244;
const EP = ['aws.sagemaker.endpoint.name', 'EndpointName'];
const IC = ['aws.sagemaker.inference_component.name', 'InferenceComponentName'];

/** The tagged host, started by the first test that needs it and stopped after the file. */
let started;
after(async () => {
  const h = await started?.catch(() => undefined);
  h?.proc.kill();
  if (h) {
    await rm(h.dir, { recursive: true, force: true });
  }
});

function taggedHost() {
  started ??= (async () => {
    const { E2E_PLUGIN: plugin, E2E_PLUGINHOST: bin } = process.env;
    assert.ok(plugin && bin, 'E2E_PLUGIN and E2E_PLUGINHOST are unset: run with scripts/browser-test.sh');
    const dir = await mkdtemp(join(tmpdir(), 'tags-e2e-'));
    const fleetFile = join(dir, 'fleet.json');
    const proc = spawn(
      bin,
      ['--plugin', plugin, '--page', 'e2e/dist', '--tags-seed', String(TAGS_SEED), '--fleet-json', fleetFile],
      { stdio: ['ignore', 'pipe', 'pipe'] }
    );
    let log = '';
    proc.stderr.on('data', (b) => (log += b));
    const url = await new Promise((resolve, reject) => {
      let out = '';
      proc.stdout.on('data', (b) => {
        out += b;
        const m = out.match(/^pluginhost: serving (\S+)$/m);
        if (m) {
          resolve(m[1]);
        }
      });
      proc.on('exit', (code) => reject(new Error(`the tagged plugin host exited (${code}):\n${log}`)));
      setTimeout(() => reject(new Error(`the tagged plugin host did not come up in 120s:\n${log}`)), 120_000);
    });
    return { proc, dir, url, fleet: JSON.parse(await readFile(fleetFile, 'utf8')) };
  })();
  return started;
}

/** The team that owns the most endpoints, its endpoints, and every resource's owner, from the fleet file. */
function team(fleet) {
  const owner = new Map(); // endpoint or IC name → its Team tag ('' when untagged)
  const count = new Map();
  for (const e of fleet.Endpoints) {
    const t = e.Tags?.Team ?? '';
    owner.set(e.Name, t);
    count.set(t, (count.get(t) ?? 0) + 1);
    for (const ic of e.InferenceComponents ?? []) {
      owner.set(ic.Name, ic.Tags?.Team ?? '');
    }
  }
  const [name] = [...count].filter(([t]) => t !== '').sort((a, b) => b[1] - a[1])[0];
  const endpoints = fleet.Endpoints.filter((e) => e.Tags?.Team === name).map((e) => e.Name);
  return { name, endpoints, owner };
}

/** Every frame field of a /api/ds/query answer: its labels and, for a string field, its values. */
function fields(body) {
  return Object.values(body.results ?? {}).flatMap((r) =>
    (r.frames ?? []).flatMap((f) =>
      f.schema.fields.map((fd, i) => ({
        labels: fd.labels ?? {},
        values: fd.type === 'string' ? (f.data?.values?.[i] ?? []) : [],
      }))
    )
  );
}

/**
 * The fleet's resources a panel's frames name: from series labels (endpoint, IC) and from
 * table cells that are an endpoint's or IC's name.
 */
function resourcesOf(panelFields, owner) {
  const series = [];
  const cells = new Set();
  for (const { labels, values } of panelFields) {
    const ep = EP.map((l) => labels[l]).find(Boolean);
    const ic = IC.map((l) => labels[l]).find(Boolean);
    if (ep || ic) {
      series.push({ ep, ic });
    }
    for (const v of values) {
      if (typeof v === 'string' && owner.has(v)) {
        cells.add(v);
      }
    }
  }
  return { series, cells: [...cells] };
}

/** Opens a dashboard with these filters and returns each panel's state and answered fields, and the discovery calls. */
async function load(host, name, filters) {
  const panelFields = new Map();
  const search = `dashboard=${name}&from=now-2h${filters ? `&filters=${encodeURIComponent(JSON.stringify(filters))}` : ''}`;
  const since = Date.now();
  const browser = await chromium.browser;
  const context = await browser.newContext();
  const track = async (resp) => {
    if (resp.url().includes('/api/ds/query')) {
      const id = Number(await resp.request().headerValue('x-panel-id'));
      const body = await resp.json().catch(() => ({}));
      panelFields.set(id, [...(panelFields.get(id) ?? []), ...fields(body)]);
    }
  };
  const pending = [];
  context.on('response', (r) => pending.push(track(r)));
  const { page, errors } = await openPage(Promise.resolve(context), search, 'dashboard', viewport, host.url);
  const dashboard = JSON.parse(await readFile(join('src', 'dashboards', `${name}.json`), 'utf8'));
  const panels = dashboard.panels.filter((p) => p.type !== 'row');
  await page.waitForFunction(
    (n) =>
      document.querySelectorAll('[data-testid="panel"]').length === n &&
      document.querySelectorAll('[data-testid="panel"][data-state="loading"]').length === 0,
    panels.length,
    { timeout: 90_000 }
  );
  const discovery = await discoverySince(since, host.url);
  await Promise.all(pending);
  const states = new Map();
  for (const p of panels) {
    states.set(p.id, await page.locator(`[data-testid="panel"][data-panel-id="${p.id}"]`).getAttribute('data-state'));
  }
  return { page, context, errors, panels, states, panelFields, discovery };
}

for (const name of ['performance', 'capacity', 'reliability']) {
  test(`dashboard ${name} under Filters "@aws.tag.Team" = a team: only its resources, no panel emptied`, async () => {
    const host = await taggedHost();
    const t = team(host.fleet);
    const others = [...t.owner].filter(([, o]) => o !== t.name).map(([r]) => r);
    assert.ok(
      t.endpoints.length >= 2 && others.length > 0,
      `seed ${TAGS_SEED}: team ${JSON.stringify(t.name)} owns ${t.endpoints}`
    );
    const mine = (r) => t.owner.get(r) === t.name;
    // A series is the team's when its endpoint or its component is tagged with the team.
    const seriesMine = (s) => (s.ep !== undefined && mine(s.ep)) || (s.ic !== undefined && mine(s.ic));

    // Filtered first: the first dashboard loads with the plugin's lookups cold, so its tag
    // resolution and the variables' discovery calls all count against the budget.
    const filtered = await load(host, name, [{ key: '@aws.tag.Team', operator: '=', value: t.name }]);
    const all = await load(host, name);
    let checked = 0;
    const emptied = [];
    for (const p of filtered.panels) {
      const before = all.states.get(p.id);
      const now = filtered.states.get(p.id);
      assert.notEqual(now, 'error', `panel "${p.title}" fails under the tag filter`);
      const got = resourcesOf(filtered.panelFields.get(p.id) ?? [], t.owner);
      const foreign = [
        ...got.series.filter((s) => !seriesMine(s)).map((s) => `${s.ep ?? ''}/${s.ic ?? ''}`),
        ...got.cells.filter((r) => !mine(r)),
      ];
      assert.deepEqual([...new Set(foreign)], [], `panel "${p.title}" shows other teams' resources`);
      checked += got.series.length + got.cells.length;
      if (before === 'data' && now !== 'data') {
        // Empty is right only for a panel whose unfiltered data named resources, none of them the team's.
        const had = resourcesOf(all.panelFields.get(p.id) ?? [], t.owner);
        const named = had.series.length + had.cells.length > 0;
        assert.ok(
          named && !had.series.some(seriesMine) && !had.cells.some(mine),
          `panel "${p.title}" has data without the filter and none with it (${now})`
        );
        emptied.push(p.title);
      }
    }
    assert.ok(checked > 0, 'the filtered panels name some resources to check');
    assert.ok(
      filtered.discovery.peak <= 10 && filtered.discovery.throttled === 0,
      `discovery within 10/s: ${JSON.stringify(filtered.discovery)}`
    );
    console.log(
      `${name} Team=${JSON.stringify(t.name)} (${t.endpoints.join(', ')}): ${checked} series and cells checked; ` +
        `emptied (only other teams' data before): ${emptied.join('; ') || 'none'}; ` +
        `discovery unfiltered ${JSON.stringify(all.discovery)}, filtered ${JSON.stringify(filtered.discovery)}`
    );
    await screenshot(filtered.page, `tags-${name}`);
    assert.deepEqual([...all.errors, ...filtered.errors], []);
    await all.context.close();
    await filtered.context.close();
  });
}
