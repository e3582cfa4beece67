// The variable query editor in Chromium: the stored query it writes, and the values it
// resolves through the plugin's resource routes.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { expectText, openEditor, resource, screenshot, sharedBrowser } from './browser.mjs';

const chromium = sharedBrowser();

/** Runs the variable query and returns the values the page lists. */
async function runValues(page) {
  const out = page.getByTestId('variable-values');
  await page.getByRole('button', { name: 'Run query' }).click();
  const text = await expectText(out, /^(\d+ values|error)/);
  assert.doesNotMatch(text, /^error/);
  return text.split('\n').slice(1).filter(Boolean);
}

test('variable editor: label values, metrics and a query result', async () => {
  const { page, errors } = await openEditor(chromium.browser, 'variable');
  const stored = page.getByText('Stored as:');

  // Label values of a dotted label, filtered by a metric: the classic string form, and the
  // values are exactly the plugin's answer for that label and selector.
  const label = 'aws.sagemaker.endpoint.name';
  const metric = 'vllm:num_requests_running';
  await page.getByLabel('Label', { exact: true }).fill(label);
  await page.getByLabel('Filter by selector').fill(metric);
  await page.getByLabel('Filter by selector').blur();
  await expectText(stored, new RegExp(`label_values\\(${metric}, "${label}"\\)`));
  const endpoints = await resource(`api/v1/label/${label}/values`, { 'match[]': metric });
  assert.ok(endpoints.length > 0, 'the emulator serves vLLM endpoints');
  assert.deepEqual((await runValues(page)).sort(), [...endpoints].sort());
  await screenshot(page, 'variable-1-label-values');

  // Metrics by regex: every vLLM metric name the plugin discovers, and nothing else.
  await page.getByRole('radio', { name: 'Metrics' }).click();
  await page.getByLabel('Metric regex').fill('vllm:.*');
  await page.getByLabel('Metric regex').blur();
  await expectText(stored, /metrics\(vllm:\.\*\)/);
  const vllm = (await resource('api/v1/label/__name__/values')).filter((n) => n.startsWith('vllm:'));
  assert.deepEqual((await runValues(page)).sort(), [...vllm].sort());
  await screenshot(page, 'variable-2-metrics');

  // A query result: one value per returned series, at most the topk.
  await page.getByRole('radio', { name: 'Query result' }).click();
  const query = page.getByLabel('Query', { exact: true });
  await query.fill(`topk(2, sum by ("${label}") (${metric}))`);
  await query.blur();
  const samples = await runValues(page);
  assert.ok(samples.length >= 1 && samples.length <= 2, `topk(2) gave ${samples.length} values`);
  for (const s of samples) {
    assert.ok(
      endpoints.some((e) => s.includes(e)),
      `${s} names one of the endpoints`
    );
  }
  await screenshot(page, 'variable-3-query-result');

  assert.deepEqual(errors, []);
});
