// The code editor in Chromium: CodeMirror typing and completion fed by the plugin's resource
// answers (quoted dotted labels, label values), a query through /api/ds/query, and hints.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { escapeRegExp, expectText, openEditor, resource, screenshot, sharedBrowser } from './browser.mjs';

const chromium = sharedBrowser();

const completions = (page) => page.locator('.cm-tooltip-autocomplete li .cm-completionLabel');

/** Waits for the completion list to offer want, and returns every label it shows. */
async function offered(page, want) {
  await completions(page).filter({ hasText: want }).first().waitFor();
  return completions(page).allInnerTexts();
}

test('code editor: completion from resource answers, a query, hints', async () => {
  const { page, errors } = await openEditor(chromium.browser, 'query');
  const editor = page.getByRole('textbox', { name: 'PromQL query' });
  const expr = page.getByTestId('expr');

  // Label names of the metric come from the plugin's api/v1/labels answer; picking a dotted
  // or @ one inserts it quoted, as CloudWatch needs it.
  const metric = 'DCGM_FI_DEV_GPU_UTIL';
  const labels = (await resource('api/v1/labels', { 'match[]': metric })).filter((l) => l !== '__name__');
  const hostLabel = labels.find((l) => l.startsWith('@resource.host.'));
  assert.ok(hostLabel, `the emulator's ${metric} has a @resource.host.* label: ${labels}`);
  await editor.click();
  await page.keyboard.type(`${metric}{`);
  const names = await offered(page, hostLabel);
  assert.deepEqual(
    [...names].sort(),
    [...labels].sort(),
    'the completion offers exactly the labels the plugin answered'
  );
  await screenshot(page, 'query-1-label-completion');
  await completions(page).filter({ hasText: hostLabel }).first().click();
  await expectText(expr, new RegExp(`^${metric}\\{"${escapeRegExp(hostLabel)}"\\}$`));

  // Then a value: the values offered are the plugin's label-values answer for that metric.
  await page.keyboard.type('="');
  const hosts = await resource(`api/v1/label/${encodeURIComponent(hostLabel)}/values`, { 'match[]': metric });
  const values = await offered(page, hosts[0]);
  assert.deepEqual([...values].sort(), [...hosts].sort(), "the values offered are the plugin's answer");
  await screenshot(page, 'query-2-value-completion');
  await completions(page).filter({ hasText: hosts[0] }).first().click();
  await expectText(expr, new RegExp(`^${metric}\\{"${escapeRegExp(hostLabel)}"="${hosts[0]}"\\}$`));

  // Shift+Enter runs it: /api/ds/query → the plugin → the emulator, frames back.
  await page.keyboard.press('Shift+Enter');
  const result = page.getByTestId('query-result');
  await expectText(result, /^[1-9]\d* frames/);
  assert.match(
    await result.innerText(),
    new RegExp(`"${escapeRegExp(hostLabel)}":"${hosts[0]}"`),
    'the series is that host'
  );
  await screenshot(page, 'query-3-query-result');

  // rate() over a SageMaker delta metric gets the hint, with a fix that rewrites it.
  await editor.click();
  await page.keyboard.press('Control+a');
  await page.keyboard.type('sum(rate(Invocations[5m');
  const hint = page.getByTestId('hint-rate-on-delta');
  await hint.waitFor();
  assert.match(await hint.innerText(), /Invocations is a delta metric/);
  await screenshot(page, 'query-4-rate-on-delta-hint');
  await hint.getByRole('button', { name: 'Fix query' }).click();
  await expectText(expr, /^sum\(sum_over_time\(Invocations\[5m\]\)\)$/);
  assert.equal(await hint.count(), 0, 'the hint goes once the query is fixed');
  await screenshot(page, 'query-5-hint-fixed');

  assert.deepEqual(errors, []);
});
