// The bundled dashboards in Chromium: variables resolved through the plugin, every panel's
// queries through /api/ds/query, each panel drawn by @grafana/ui's visualisations on the
// dashboard's grid (e2e/page/dashboard.tsx). Asserts each panel shows data or its own noValue
// text, and saves a full-page screenshot and the first screen (the catalog's pick).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';

import { openPage, resource, screenshotDir, sharedBrowser } from './browser.mjs';

const chromium = sharedBrowser();

// The catalog's screenshots are 1600 px wide; the first screen is what a visitor sees first.
const viewport = { width: 1600, height: 1000 };

/** The element each visualisation draws when it has data (a stat's BigValue has no test id: its text is checked). */
const drawn = {
  timeseries: 'canvas',
  heatmap: 'canvas',
  table: '[role="cell"]',
  barchart: '[data-testid="data-testid Bar gauge value"]',
};

// The host runs the emulator's healthy scenario: no capacity errors (ICE), no inference-
// component cold starts in the window, no GPU XID or ECC errors, no deployment or setting
// change (CloudTrail). Only panels about those may be empty.
const incident = /\bICE\b|cold start|XID|ECC|^Changes$/i;

for (const name of ['performance', 'capacity', 'reliability']) {
  test(`dashboard ${name}: every panel shows data or its noValue text`, async () => {
    const dashboard = JSON.parse(await readFile(join('src', 'dashboards', `${name}.json`), 'utf8'));
    // The host backfills two hours of fleet history; the dashboards default to six.
    const { page, errors } = await openPage(chromium.browser, `dashboard=${name}&from=now-2h`, 'dashboard', viewport);
    const panels = dashboard.panels.filter((p) => p.type !== 'row');
    await page.waitForFunction(
      (n) =>
        document.querySelectorAll('[data-testid="panel"]').length === n &&
        document.querySelectorAll('[data-testid="panel"][data-state="loading"]').length === 0,
      panels.length,
      { timeout: 90_000 }
    );

    // The endpoint variable's options are the plugin's label values for the fleet.
    const endpoints = await resource('api/v1/label/aws.sagemaker.endpoint.name/values', {
      'match[]': 'node_memory_MemTotal_bytes',
    });
    assert.ok(endpoints.length > 0, 'the emulator serves endpoints');
    assert.match(await page.locator('[data-variable="endpoint"]').innerText(), /endpoint = All/);

    const states = { data: [], novalue: [] };
    for (const p of panels) {
      const el = page.locator(`[data-testid="panel"][data-panel-id="${p.id}"]`);
      const state = await el.getAttribute('data-state');
      const text = await el.innerText();
      assert.ok(state === 'data' || state === 'novalue', `panel "${p.title}" (${p.type}) is ${state}: ${text}`);
      assert.ok(text.includes(p.title), `panel "${p.title}" shows its title`);
      if (state === 'novalue') {
        // Only a panel that says what its emptiness means may be empty on a healthy fleet.
        const noValue = p.fieldConfig?.defaults?.noValue;
        assert.ok(noValue, `panel "${p.title}" has no data and no noValue text: Grafana would show "No data"`);
        assert.ok(text.includes(noValue), `panel "${p.title}" without data shows its noValue "${noValue}": ${text}`);
        assert.match(p.title, incident, `panel "${p.title}" is empty on the healthy fleet`);
      } else if (p.type === 'stat') {
        const value = text.replace(p.title, '').trim();
        assert.ok(value !== '' && value !== 'No data', `stat "${p.title}" with data shows a value: ${text}`);
      } else {
        const n = await el.locator(drawn[p.type]).count();
        assert.ok(n > 0, `panel "${p.title}" (${p.type}) with data draws ${drawn[p.type]}`);
      }
      states[state].push(p.title);
    }
    console.log(
      `${name}: ${states.data.length} panels with data, ${states.novalue.length} showing noValue: ${states.novalue.join('; ')}`
    );

    await page.screenshot({ path: join(screenshotDir, `dashboard-${name}.png`), fullPage: true });
    await page.screenshot({ path: join(screenshotDir, `dashboard-${name}-top.png`) });
    assert.deepEqual(errors, []);
  });
}
