// Ad-hoc filters and Explore's filter for/out in Chromium, on label values the plugin host
// generates with a fixed seed (quotes, backslashes, newlines, UTF-8 in SGLang's model_name):
// the PromQL the data source writes, what the plugin runs, and the discovery requests the
// emulator answers while a dashboard with a Filters variable opens.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { discoverySince, openEditor, resource, screenshot, sharedBrowser } from './browser.mjs';

const chromium = sharedBrowser();

const METRIC = 'sglang:num_running_reqs';
const LABEL = 'model_name';
const EP = 'aws.sagemaker.endpoint.name';
const EXPR = `${METRIC} + 0 * scalar(sum(sum_over_time(Invocations[5m])))`;
// The vended selector carries EndpointName, not model_name: no matcher ever goes into it.
const VENDED = 'sum_over_time(Invocations[5m])';

/**
 * A PromQL double-quoted literal of v, written here independently of the plugin: for the
 * characters the generated values hold (", \, newline, UTF-8) Go's and JSON's escapes agree.
 */
const literal = (v) => JSON.stringify(v);

/** Polls fn until it returns a truthy value. */
async function until(fn, what, timeout = 15_000) {
  const end = Date.now() + timeout;
  for (;;) {
    const v = await fn();
    if (v) {
      return v;
    }
    if (Date.now() > end) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function exploreRows(page) {
  const table = page.getByTestId('explore-table');
  await until(async () => (await table.getAttribute('data-loaded')) === 'true', 'the Explore table');
  return page
    .getByTestId('explore-row')
    .evaluateAll((rows) => rows.map((r) => ({ value: r.dataset.value, active: r.dataset.active })));
}

/** Clicks a button of the row of value and waits for the query to change and run. */
async function clickRow(page, value, button) {
  const before = await page.getByTestId('explore-expr').textContent();
  const rows = await exploreRows(page);
  const i = rows.findIndex((r) => r.value === value);
  assert.ok(i >= 0, `a row for ${literal(value)}`);
  await page.getByTestId('explore-row').nth(i).getByRole('button', { name: button, exact: true }).click();
  await until(async () => (await page.getByTestId('explore-expr').textContent()) !== before, 'the query to change');
  const expr = await page.getByTestId('explore-expr').textContent();
  return { expr, rows: await exploreRows(page) };
}

async function generatedValues() {
  const all = await resource(`api/v1/label/${LABEL}/values`, { 'match[]': METRIC });
  const hard = all.filter((v) => v.includes('"') && v.includes('\\') && v.includes('\n'));
  assert.ok(hard.length >= 2, `the host serves generated ${LABEL} values: ${JSON.stringify(all)}`);
  return { all, hard };
}

test('Explore: filter for and out from table cells and legend entries', async () => {
  const { page, errors } = await openEditor(chromium.browser, 'filters');
  const { all, hard } = await generatedValues();
  const [v, w] = hard;

  await page.getByRole('button', { name: 'Run query', exact: true }).click();
  const start = await exploreRows(page);
  // Rows per series: the real SGLang copies share one model_name.
  assert.deepEqual([...new Set(start.map((r) => r.value))].sort(), [...all].sort(), 'the model_names the plugin lists');
  assert.ok(start.every((r) => r.active === 'false'));
  await screenshot(page, 'filters-1-explore');

  // Filter for a value with a quote, a backslash and a newline: the matcher goes into the
  // SGLang selector only, and the one row left is that value.
  let step = await clickRow(page, v, 'Filter for value');
  assert.equal(step.expr, `${METRIC}{${LABEL}=${literal(v)}} + 0 * scalar(sum(${VENDED}))`);
  assert.deepEqual(step.rows, [{ value: v, active: 'true' }]);
  await screenshot(page, 'filters-2-filter-for');

  // The same again removes it: the query is the original text.
  step = await clickRow(page, v, 'Filter for value');
  assert.equal(step.expr, EXPR);
  assert.equal(step.rows.length, start.length);

  // Filter out: every row but that value.
  step = await clickRow(page, v, 'Filter out value');
  assert.equal(step.expr, `${METRIC}{${LABEL}!=${literal(v)}} + 0 * scalar(sum(${VENDED}))`);
  assert.deepEqual(
    step.rows.map((r) => r.value).sort(),
    start
      .map((r) => r.value)
      .filter((x) => x !== v)
      .sort()
  );
  await screenshot(page, 'filters-3-filter-out');

  // A legend entry's filter for (modifyQuery ADD_FILTER) adds to what is there.
  step = await clickRow(page, w, 'Legend: filter for');
  assert.equal(step.expr, `${METRIC}{${LABEL}!=${literal(v)}, ${LABEL}=${literal(w)}} + 0 * scalar(sum(${VENDED}))`);
  assert.deepEqual(step.rows, [{ value: w, active: 'true' }]);
  // Its filter out replaces the filter for.
  step = await clickRow(page, w, 'Legend: filter out');
  assert.equal(step.expr, `${METRIC}{${LABEL}!=${literal(v)}, ${LABEL}!=${literal(w)}} + 0 * scalar(sum(${VENDED}))`);
  assert.deepEqual(
    step.rows.map((r) => r.value).sort(),
    start
      .map((r) => r.value)
      .filter((x) => x !== v && x !== w)
      .sort()
  );
  await screenshot(page, 'filters-4-legend');

  assert.equal(await page.getByTestId('explore-error').textContent(), '');
  assert.deepEqual(errors, []);
  await page.close();
});

/** The options a select offers, without its "choose" placeholder. */
const options = (select) => select.locator('option').evaluateAll((os) => os.map((o) => o.value).filter(Boolean));

test('dashboard: Filters keys and values from CloudWatch, applied to every query type, lookups cached', async () => {
  const { page, errors } = await openEditor(chromium.browser, 'filters');
  const { hard } = await generatedValues();
  const v = hard[0];
  const discovery = [];
  page.on('request', (r) => {
    if (/\/resources\/api\/v1\/(labels|label\/)/.test(r.url())) {
      discovery.push(Date.now());
    }
  });

  // Keys: exactly the plugin's label names, dotted and @ names included.
  const keySelect = page.getByLabel('Filter key');
  const labels = (await resource('api/v1/labels')).filter((l) => l !== '__name__');
  await until(async () => (await options(keySelect)).length > 0, 'the filter keys');
  assert.deepEqual((await options(keySelect)).sort(), [...labels].sort());
  assert.ok(labels.includes(EP) && labels.includes(LABEL) && labels.some((l) => l.startsWith('@resource.')));

  // Values of model_name: the plugin's answer, generated ones included; pick one.
  const valueSelect = page.getByLabel('Filter value');
  const pick = async (key, value, want) => {
    await keySelect.selectOption(key);
    await until(async () => (await valueSelect.getAttribute('data-loaded')) === 'true', `values of ${key}`);
    assert.deepEqual((await options(valueSelect)).sort(), [...want].sort(), `values of ${key}`);
    await valueSelect.selectOption({ value });
  };
  await pick(LABEL, v, await resource(`api/v1/label/${LABEL}/values`));
  // The endpoint's values are narrowed by the model_name filter: the generated series' endpoint.
  const narrowed = await resource(`api/v1/label/${encodeURIComponent(EP)}/values`, {
    'match[]': `{${LABEL}=${literal(v)}}`,
  });
  assert.deepEqual(narrowed, ['chat-ic']);
  await pick(EP, 'chat-ic', narrowed);
  await screenshot(page, 'filters-5-pickers');

  // 20 panels, each with its filter menus' lookups (keys, and the values of both filters'
  // keys): with no cache at all (only the plugin's discovery rate limit), without the
  // browser's lookup cache, and with it.
  const counts = {};
  for (const [name, button] of [
    ['bypass', 'Open dashboard without any cache'],
    ['fresh', 'Open dashboard without the lookup cache'],
    ['cached', 'Open dashboard'],
  ]) {
    const from = discovery.length;
    const since = Date.now();
    await page.getByRole('button', { name: button, exact: true }).click();
    const panels = page.getByTestId('dashboard-panels');
    await until(async () => (await panels.getAttribute('data-loaded')) === 'true', 'the panels', 60_000);
    counts[name] = {
      browser: discovery.length - from,
      ...JSON.parse(await page.getByTestId('dashboard-lookups').textContent()),
      emulator: await discoverySince(since),
      panels: JSON.parse(await panels.textContent()),
    };
  }
  const summary = Object.fromEntries(Object.entries(counts).map(([k, { panels, ...c }]) => [k, c]));
  console.log(`lookups while opening: ${JSON.stringify(summary)}`);
  assert.equal(counts.bypass.browser, 20 * 3, 'no cache: every panel asks the plugin');
  assert.equal(counts.fresh.browser, 20 * 3, 'without the lookup cache: every panel asks the plugin');
  assert.ok(
    counts.cached.browser <= 3,
    `cached: at most one request per distinct lookup, got ${counts.cached.browser}`
  );
  assert.equal(counts.bypass.emulator.requests, 20 * 3, 'with X-Cache-Skip every lookup reaches the emulator');
  for (const c of Object.values(counts)) {
    assert.equal(c.failed, 0, 'every lookup answered');
    assert.equal(c.emulator.throttled, 0, 'no 422 or 429 from the emulator');
    assert.ok(c.emulator.peak <= 10, `at most 10 discovery requests in any second, got ${c.emulator.peak}`);
  }

  // Every panel took the filters it can use and says which it ignored.
  const byRef = Object.fromEntries(counts.cached.panels.map((p) => [p.refId, p]));
  const { promql, alarms, inventory, diagnosis } = byRef;
  assert.equal(
    promql.executed.split('\n')[0],
    `Expr: ${METRIC}{${LABEL}=${literal(v)}, "${EP}"="chat-ic"} + 0 * scalar(sum(${VENDED}))`
  );
  assert.equal(promql.series, 1, 'one series: the picked model_name');
  assert.deepEqual(promql.notices, []);
  assert.deepEqual(inventory.endpoints, ['chat-ic']);
  assert.ok(
    alarms.endpoints.length > 0 && alarms.endpoints.every((e) => e === 'chat-ic'),
    JSON.stringify(alarms.endpoints)
  );
  for (const p of [alarms, inventory, diagnosis]) {
    assert.ok(
      p.notices.some((n) =>
        n.includes(`${LABEL} = ${literal(v)}: only endpoint, inference component and region filters`)
      ),
      `${p.refId} notes the ignored model_name filter: ${JSON.stringify(p.notices)}`
    );
  }
  await screenshot(page, 'filters-6-dashboard');
  assert.deepEqual(errors, []);
  await page.close();
});
