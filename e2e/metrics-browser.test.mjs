// The code editor's metrics browser and starter queries in Chromium, against the plugin binary
// and the emulator, whose host adds 5,000 generated instances (scripts/browser-test.sh
// --generated-instances) so a label has thousands of values; and what the query inspector
// shows of a query: the PromQL as sent with step and range, the cost estimate, and how the
// results cache served it.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';

import { escapeRegExp, expectText, openEditor, resource, screenshot, sharedBrowser } from './browser.mjs';

const chromium = sharedBrowser();
const starters = JSON.parse(await readFile(new URL('../src/starters.json', import.meta.url), 'utf8'));

const GENERATED = 'pluginhost_generated_instance_load';
const HOST = '@resource.host.id';
const ROW_LIMIT = 100; // src/components/MetricsBrowser.tsx

test('starter queries: offered on an empty query, a click runs one; the inspector shows it as sent', async (t) => {
  const { page, errors } = await openEditor(chromium.browser, 'query');
  const list = page.getByTestId('starter-queries');
  await list.waitFor();
  assert.deepEqual(
    await list.getByRole('button').allInnerTexts(),
    starters.map((s) => s.title),
    'every starter of src/starters.json is offered, in order'
  );
  for (const s of starters) {
    assert.equal(await list.getByText(s.note, { exact: true }).count(), 1, `the note of ${s.title} is shown`);
  }
  await screenshot(page, 'starters-1-offered');

  // One with $__rate_interval, so the inspector shows the interpolated text.
  const pick = starters.find((s) => s.expr.includes('$__rate_interval') && s.title.startsWith('Output tokens'));
  await list.getByRole('button', { name: pick.title }).click();
  await expectText(page.getByTestId('expr'), new RegExp(`^${escapeRegExp(pick.expr)}$`));
  await expectText(page.getByTestId('query-result'), /^[1-9]\d* frames/);
  assert.equal(await list.count(), 0, 'the starters go once the query has text');

  const inspector = page.getByTestId('query-inspector');
  const sent = escapeRegExp(pick.expr).replaceAll(escapeRegExp('$__rate_interval'), '\\d+[smh]');
  const first = await expectText(inspector, /Results cache: /);
  await screenshot(page, 'starters-2-ran-inspector');
  assert.match(
    first,
    new RegExp(`^Expr: ${sent}\\nStep: \\d+[smh]\\nRange: \\S+Z to \\S+Z$`, 'm'),
    'range query as sent'
  );
  assert.match(first, new RegExp(`^Expr: ${sent}\\nStep: \\d+[smh]\\nTime: \\S+Z$`, 'm'), 'instant query as sent');
  assert.match(first, /^Results cache: miss \(upstream calls\): 1$/m);
  assert.match(first, /^Samples scanned \(estimate\): [1-9]\d*$/m);
  assert.match(first, /^Estimated cost \(USD at \$[\d.]+ per 1M samples/m);

  // The same query again: the range part comes from the results cache.
  await page.getByRole('textbox', { name: 'PromQL query' }).click();
  await page.keyboard.press('Shift+Enter');
  const again = await expectText(inspector, /^Results cache: (hit|partial) /m);
  const outcome = again.match(/^Results cache: (hit|partial) \(upstream calls\): (\d+)$/m);
  assert.ok(outcome, again);
  t.diagnostic(`second run: results cache ${outcome[1]}, ${outcome[2]} upstream call(s)`);
  await screenshot(page, 'starters-3-cache-served');
  assert.deepEqual(errors, []);
});

test('metrics browser: catalog kinds, value counts, 5,000 instances capped, a selector that runs', async (t) => {
  const { page, errors } = await openEditor(chromium.browser, 'query');
  await page.getByRole('button', { name: 'Metrics browser' }).click();
  const browser = page.getByTestId('metrics-browser');
  const metrics = browser.getByTestId('browser-metric-list');

  // A catalog metric shows its family, type and unit.
  await browser.getByRole('textbox', { name: 'Search metrics' }).fill('DCGM_FI_DEV_GPU_UTIL');
  await expectText(metrics.getByRole('button', { name: /^DCGM_FI_DEV_GPU_UTIL/ }), /GPU \(DCGM\) · gauge · %/);
  await screenshot(page, 'browser-1-catalog-kind');

  // The generated metric: one label with 5,000 values, as the plugin answers them.
  const hosts = await resource(`api/v1/label/${encodeURIComponent(HOST)}/values`, { 'match[]': GENERATED });
  assert.equal(hosts.length, 5000, 'the host wrote 5,000 generated instances');
  await browser.getByRole('textbox', { name: 'Search metrics' }).fill('generated');
  await metrics.getByRole('button', { name: new RegExp(`^${GENERATED}`) }).click();
  const labels = browser.getByTestId('browser-label-list');
  await expectText(labels.getByRole('button', { name: new RegExp(`^${escapeRegExp(HOST)}`) }), /5000 values$/);
  await expectText(labels.getByRole('button', { name: /^aws\.sagemaker\.endpoint\.name/ }), /1 value$/);

  const clicked = Date.now();
  await labels.getByRole('button', { name: new RegExp(`^${escapeRegExp(HOST)}`) }).click();
  const values = browser.getByTestId('browser-value-list');
  await values
    .getByRole('listitem')
    .nth(ROW_LIMIT - 1)
    .waitFor();
  const shownIn = Date.now() - clicked;
  assert.equal(await values.getByRole('listitem').count(), ROW_LIMIT, 'only the first rows render');
  await expectText(browser, /5,000 values; showing the first 100, search to narrow/);
  await screenshot(page, 'browser-2-capped-values');

  // A search shows exactly the values containing it.
  const host = hosts[1234];
  const q = host.slice(6, 11);
  const wanted = hosts.filter((h) => h.includes(q));
  const typed = Date.now();
  await browser.getByRole('textbox', { name: 'Search values' }).fill(q);
  await expectText(values, new RegExp(`^${wanted.map(escapeRegExp).join('\\n')}$`));
  const searchedIn = Date.now() - typed;
  t.diagnostic(
    `5,000 values: ${ROW_LIMIT} rows rendered ${shownIn} ms after the click; search "${q}" → ${wanted.length} rows in ${searchedIn} ms`
  );
  await values.getByText(host, { exact: true }).click();
  const selector = `${GENERATED}{"${HOST}"="${host}"}`;
  await expectText(browser.getByTestId('browser-selector'), new RegExp(`^${escapeRegExp(selector)}$`));
  await screenshot(page, 'browser-3-selector');

  // Use query: the selector goes into the code editor and runs through the plugin.
  await browser.getByRole('button', { name: 'Use query' }).click();
  await expectText(page.getByTestId('expr'), new RegExp(`^${escapeRegExp(selector)}$`));
  const result = await expectText(page.getByTestId('query-result'), /^[1-9]\d* frames/);
  assert.match(result, new RegExp(`"${escapeRegExp(HOST)}":"${host}"`), 'the series is that instance');
  assert.equal(await browser.count(), 0, 'the browser closes on use');
  await screenshot(page, 'browser-4-ran');
  assert.deepEqual(errors, []);
});
