// The Region picker in Chromium: its options are the plugin's regions answer, a picked region
// runs the query there (series labelled with it) and completion asks that region; a
// mistyped region is flagged in the editor and refused by the plugin before anything is sent.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { escapeRegExp, expectText, hostURL, openEditor, screenshot, sharedBrowser } from './browser.mjs';

const chromium = sharedBrowser();

/** The plugin's regions answer (a plain JSON array, not the Prometheus envelope). */
async function regions() {
  const resp = await fetch(`${hostURL}/api/datasources/uid/sagemaker/resources/regions`);
  assert.equal(resp.status, 200, `regions: ${await resp.clone().text()}`);
  return resp.json();
}

test('region picker: options from the plugin, a query and completion in the picked region, a typo refused', async () => {
  const { page, errors } = await openEditor(chromium.browser, 'query');
  const picker = page.getByLabel('Region', { exact: true });
  const result = page.getByTestId('query-result');
  // Every resource call and query the page makes, to check which region each asked.
  const discovery = [];
  const queries = [];
  page.on('request', (req) => {
    const url = new URL(req.url());
    if (url.pathname.includes('/resources/api/v1/')) {
      discovery.push(url);
    } else if (url.pathname === '/api/ds/query') {
      queries.push(...req.postDataJSON().queries);
    }
  });

  const want = await regions();
  assert.ok(want.length > 0, 'the plugin lists at least its default region');
  await picker.click();
  const offered = await page.getByRole('option').allInnerTexts();
  assert.deepEqual(
    offered.map((o) => o.trim()),
    want,
    "the picker offers the plugin's regions (the page has no variables)"
  );
  await screenshot(page, 'region-1-options');

  // Picking a region runs the query there: each series carries @aws.region.
  const region = want[0];
  await page.keyboard.press('Escape');
  const editor = page.getByRole('textbox', { name: 'PromQL query' });
  await editor.click();
  await page.keyboard.type('DCGM_FI_DEV_GPU_UTIL');
  // Leaving the code editor runs the query once, in the default region.
  await page.mouse.click(1100, 850);
  await expectText(result, /^[1-9]\d* frames/);
  queries.length = 0;
  await picker.click();
  const answered = page.waitForResponse((resp) => new URL(resp.url()).pathname === '/api/ds/query');
  await page.getByRole('option', { name: region, exact: true }).click();
  await answered;
  await expectText(result, /^[1-9]\d* frames/);
  assert.deepEqual(
    queries.map((q) => [q.refId, q.region]),
    [
      ['A', region],
      ['A-Instant', region],
    ],
    'the picked region goes to the plugin with both halves of the query'
  );
  const text = await result.innerText();
  // Explore's default runs range and instant; the instant half is a table without labels.
  const series = text.split('\n').filter((line) => line.includes('timeseries'));
  assert.ok(series.length > 0, `time series came back:\n${text}`);
  assert.ok(
    series.every((line) => line.includes(`"@aws.region":"${region}"`)),
    `every series names ${region}:\n${text}`
  );
  await screenshot(page, 'region-2-query-in-region');

  // Completion now asks the picked region.
  discovery.length = 0;
  await editor.click();
  await page.keyboard.press('End');
  await page.keyboard.type('{');
  await page.locator('.cm-tooltip-autocomplete').waitFor();
  assert.ok(discovery.length > 0, 'completion made resource calls');
  assert.deepEqual(
    discovery.map((u) => u.searchParams.get('region')),
    discovery.map(() => region),
    `every completion call carries region=${region}: ${discovery.map((u) => u.search).join(' ')}`
  );
  await page.keyboard.press('Escape');
  await page.keyboard.press('Backspace');

  // A typo: the editor says what it is and what was meant; the plugin refuses the query.
  await page.getByRole('button', { name: 'Remove' }).first().click();
  await picker.click();
  await picker.fill('us-east1');
  // A typed name is the list's "Use custom value" row.
  await page
    .getByRole('option')
    .filter({ has: page.getByText('us-east1', { exact: true }) })
    .click();
  await page.getByText('"us-east1" is not an AWS region name (like us-east-1); did you mean us-east-1?').waitFor();
  await expectText(result, new RegExp(`^error: .*${escapeRegExp('region "us-east1" is not an AWS region name')}`));
  await screenshot(page, 'region-3-typo');

  assert.deepEqual(errors, []);
});
