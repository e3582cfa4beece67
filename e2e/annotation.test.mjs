// The annotation editor in Chromium: a PromQL annotation typed into its code editor, run the
// way Grafana's annotation runner does (prepareAnnotation → /api/ds/query → processEvents).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { expectText, openEditor, resource, screenshot, sharedBrowser } from './browser.mjs';

const chromium = sharedBrowser();

test('annotation editor: events titled and tagged from the series labels', async () => {
  const { page, errors } = await openEditor(chromium.browser, 'annotation');
  const label = 'aws.sagemaker.endpoint.name';
  const metric = 'vllm:num_requests_running';

  await page.getByRole('textbox', { name: 'PromQL query' }).click();
  // Typed as a user would; the editor closes brackets and quotes, typing over them.
  await page.keyboard.type(`sum by ("${label}") (${metric}) > 0`);
  await page.keyboard.press('Escape'); // close any completion list
  await page.getByLabel('Title').fill(`{{${label}}}`);
  await page.getByLabel('Tags').fill(label);
  await screenshot(page, 'annotation-1-editor');

  await page.getByRole('button', { name: 'Preview events' }).click();
  const out = page.getByTestId('annotation-events');
  const text = await expectText(out, /^\d+ events/);
  const events = text.split('\n').slice(1).filter(Boolean);
  assert.ok(events.length > 0, 'a busy fleet has requests running: at least one event');
  const endpoints = await resource(`api/v1/label/${label}/values`, { 'match[]': metric });
  for (const e of events) {
    // "<title> [<tags>]": the title and the tag are both the endpoint of the series.
    const m = /^(.+) \[(.*)\]$/.exec(e);
    assert.ok(m, `event line ${e}`);
    assert.ok(endpoints.includes(m[1]), `title ${m[1]} is an endpoint`);
    assert.equal(m[2], m[1], 'the tag is the endpoint too');
  }
  await screenshot(page, 'annotation-2-events');

  assert.deepEqual(errors, []);
});
