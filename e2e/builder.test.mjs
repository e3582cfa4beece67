// The query builder in Chromium: metric → filter → aggregation gives the PromQL string, the
// string goes to Code and runs, and a query typed in Code opens in the builder (or stays in
// Code with its reason). Names and values come from the plugin's resource answers.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { escapeRegExp, expectText, openEditor, resource, screenshot, sharedBrowser } from './browser.mjs';

const chromium = sharedBrowser();

/** Switches the editor mode, then moves the pointer off the switch: its description tooltip
 * would otherwise cover the controls below, as it does for a user until the mouse moves. */
async function mode(page, name) {
  await page.getByRole('radio', { name }).click();
  await page.mouse.move(1100, 850);
}

/** Picks an option of a @grafana/ui Combobox found by its accessible name. */
async function pick(page, comboboxName, option) {
  const combobox = page.getByRole('combobox', { name: comboboxName, exact: true });
  await combobox.click();
  await combobox.fill(option);
  // An option shows its label and may go on with a description ("<metric> gauge · …").
  await page
    .getByRole('option')
    .filter({ has: page.getByText(option, { exact: true }) })
    .first()
    .click();
  // A MultiCombobox stays open, with the search typed, for further picks: clear and close it.
  if ((await page.locator('[role=listbox]:visible').count()) > 0) {
    await combobox.fill('');
    await combobox.press('Escape');
  }
}

test('builder: metric, filter and aggregation to PromQL, to Code, and back', async () => {
  const { page, errors } = await openEditor(chromium.browser, 'query');
  const preview = page.getByTestId('builder-preview');
  const expr = page.getByTestId('expr');
  const metric = 'vllm:num_requests_running';
  const label = 'aws.sagemaker.endpoint.name';
  const endpoints = await resource(`api/v1/label/${label}/values`, { 'match[]': metric });
  assert.ok(endpoints.length > 0, 'the emulator serves vLLM endpoints');

  await mode(page, 'Builder');
  await page.getByTestId('query-builder').waitFor();

  // The metric, with its kind from the catalog the backend shares.
  await pick(page, 'Metric', metric);
  await expectText(page.getByTestId('metric-kind'), /gauge/);
  await expectText(preview, new RegExp(`^${escapeRegExp(metric)}$`));
  await screenshot(page, 'builder-1-metric');

  // A filter on a dotted label: label names and values from the data source, written quoted.
  await page.getByRole('button', { name: 'Add filter' }).click();
  await pick(page, 'Filter 1 label', label);
  await pick(page, 'Filter 1 operator', '=');
  await pick(page, 'Filter 1 value', endpoints[0]);
  await expectText(preview, new RegExp(`^${escapeRegExp(`${metric}{"${label}"="${endpoints[0]}"}`)}$`));

  // Sum by endpoint.
  await pick(page, 'Aggregation', 'sum');
  await pick(page, 'Group by', label);
  const built = `sum by ("${label}") (${metric}{"${label}"="${endpoints[0]}"})`;
  await expectText(preview, new RegExp(`^${escapeRegExp(built)}$`));
  await expectText(expr, new RegExp(`^${escapeRegExp(built)}$`));
  await screenshot(page, 'builder-2-filter-and-sum');

  // To Code: the same text in CodeMirror, and it runs through the plugin.
  await mode(page, 'Code');
  const code = page.getByRole('textbox', { name: 'PromQL query' });
  await expectText(code, new RegExp(`^${escapeRegExp(built)}$`));
  await page.keyboard.press('Shift+Enter');
  await code.click();
  await page.keyboard.press('Shift+Enter');
  const result = await expectText(page.getByTestId('query-result'), /^[1-9]\d* frames/);
  assert.match(result, new RegExp(`"${escapeRegExp(label)}":"${escapeRegExp(endpoints[0])}"`));
  await screenshot(page, 'builder-3-code');

  // rate() on a delta metric stays in Code, with the reason.
  await code.click();
  await page.keyboard.press('Control+a');
  await page.keyboard.insertText('sum(rate(Invocations[5m]))');
  await mode(page, 'Builder');
  await expectText(page.getByTestId('builder-refused'), /delta metric/);
  assert.equal(await page.getByTestId('query-builder').count(), 0, 'the query stays in Code');
  await screenshot(page, 'builder-4-refused');

  // The delta-correct form opens in the builder, with its parts, and comes back unchanged.
  const delta = `sum by ("${label}") (sum_over_time(Invocations[5m]))`;
  await code.click();
  await page.keyboard.press('Control+a');
  await page.keyboard.insertText(delta);
  await mode(page, 'Builder');
  await page.getByTestId('query-builder').waitFor();
  await expectText(preview, new RegExp(`^${escapeRegExp(delta)}$`));
  await expectText(page.getByTestId('metric-kind'), /delta/);
  assert.equal(await page.getByRole('combobox', { name: 'Range function', exact: true }).inputValue(), 'sum_over_time');
  await screenshot(page, 'builder-5-delta-in-builder');
  await mode(page, 'Code');
  await expectText(code, new RegExp(`^${escapeRegExp(delta)}$`));

  assert.deepEqual(errors, []);
});
