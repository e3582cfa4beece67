// Shared set-up of the browser tests: Debian's Chromium driven by playwright-core (Playwright's
// own browser download is not reachable), the page served by the plugin host, a screenshot per
// editor state, and every console error and failed request collected so a test can fail on them.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after } from 'node:test';
import { chromium } from 'playwright-core';

export const hostURL = process.env.E2E_HOST_URL;
export const screenshotDir = process.env.E2E_SCREENSHOTS ?? 'test-results/browser';
const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';

if (!hostURL) {
  throw new Error(
    'E2E_HOST_URL is not set: run the browser tests with scripts/browser-test.sh, which starts the plugin host'
  );
}

/**
 * Chromium as the machine allows it: headless, and no background calls to Google's hosts.
 * Debian's Chromium now and then dies (SIGSEGV) while starting, before any page exists, so
 * a start that fails is tried again, up to three times; what a test does is never retried.
 */
async function launch() {
  await mkdir(screenshotDir, { recursive: true });
  for (let attempt = 1; ; attempt++) {
    try {
      // Every launch gets a new, empty profile (user data dir) of its own.
      return await chromium.launch({
        executablePath,
        headless: true,
        args: [
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
    } catch (e) {
      if (attempt >= 3) {
        throw e;
      }
      console.error(`Chromium did not start (attempt ${attempt} of 3): ${String(e).split('\n')[0]}`);
    }
  }
}

/**
 * One Chromium for the test file, started by its first test and closed after the file's tests.
 * Not started in before(): a file whose tests are all filtered out (--test-name-pattern) would
 * start a browser that nothing closes, and never exit.
 */
export function sharedBrowser() {
  let started;
  after(async () => {
    await (await started)?.close();
  });
  return {
    get browser() {
      started ??= launch();
      return started;
    },
  };
}

/** Polls a locator's text until it matches: the editors update React state asynchronously. */
export async function expectText(locator, re, timeout = 10_000) {
  const end = Date.now() + timeout;
  let text = '';
  while (Date.now() < end) {
    text = await locator.innerText();
    if (re.test(text)) {
      return text;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.match(text, re);
  return text;
}

/** A name as a literal inside a RegExp. */
export const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Opens the test page (of the host at host) at ?search and waits for the element with testId. The returned errors
 * list collects the page's console errors, uncaught exceptions and failed loads (404, or
 * status ≥ 500; a refused Save & test is a 400 the test expects), for the test to assert empty.
 */
export async function openPage(
  browserPromise,
  search,
  testId,
  viewport = { width: 1200, height: 900 },
  host = hostURL
) {
  const browser = await browserPromise;
  const page = await browser.newPage({ viewport });
  const errors = [];
  page.on('console', (msg) => {
    // A failed load is reported below with its address; "Warning:" lines are React's
    // development warnings about third-party components, not the editors' errors.
    if (msg.type() === 'error' && !/^(Warning:|Failed to load resource)/.test(msg.text())) {
      errors.push(`console: ${msg.text()}`);
    }
  });
  page.on('pageerror', (err) => errors.push(`page error: ${err.message}`));
  page.on('response', (resp) => {
    // Grafana serves its fonts itself (not in any npm package); the page falls back to others.
    const font = resp.url().includes('/public/fonts/');
    if ((resp.status() === 404 && !font) || resp.status() >= 500) {
      errors.push(`${resp.request().method()} ${resp.url()}: ${resp.status()}`);
    }
  });
  await page.goto(`${host}/?${search}`);
  try {
    await page.getByTestId(testId).waitFor();
  } catch (e) {
    // A page that fails to mount never shows the element: its errors and its text say why.
    const text = await page
      .locator('body')
      .innerText({ timeout: 1000 })
      .catch(() => '');
    const why = `the page reported: ${errors.join('\n') || 'no errors'}\nthe page shows: ${text.slice(0, 2000)}`;
    throw new Error(`${e.message}\n${why}`, { cause: e });
  }
  return { page, errors };
}

/** Opens one editor of the test page (?editor=<editor>). */
export function openEditor(browserPromise, editor) {
  return openPage(browserPromise, `editor=${editor}`, `page-${editor}`);
}

/** Writes test-results/browser/<name>.png: a reviewer's view of the state just asserted. */
export async function screenshot(page, name) {
  await page.screenshot({ path: join(screenshotDir, `${name}.png`), fullPage: true });
}

/** A resource answer straight from the host (the plugin binary against the emulator). */
export async function resource(path, params = {}) {
  const q = new URLSearchParams(params).toString();
  const resp = await fetch(`${hostURL}/api/datasources/uid/sagemaker/resources/${path}${q ? `?${q}` : ''}`);
  if (!resp.ok) {
    throw new Error(`${path}: ${resp.status} ${await resp.text()}`);
  }
  return (await resp.json()).data;
}

/**
 * Discovery requests the emulator of the host at host answered since a Unix ms time: total,
 * 422/429s, and the peak in any one second of one region (CloudWatch's budget is per account
 * and region; the region is the request's credential scope), with the regions asked.
 */
export async function discoverySince(ms, host = hostURL) {
  const resp = await fetch(`${host}/emulator/discovery?since=${ms}`);
  assert.ok(resp.ok, `emulator discovery log: ${resp.status}`);
  const log = await resp.json();
  const byRegion = Map.groupBy(log, (r) => r.region ?? '');
  let peak = 0;
  for (const reqs of byRegion.values()) {
    const times = reqs.map((r) => Date.parse(r.at));
    for (let i = 0, j = 0; i < times.length; i++) {
      while (times[i] - times[j] >= 1000) {
        j++;
      }
      peak = Math.max(peak, i - j + 1);
    }
  }
  return {
    requests: log.length,
    throttled: log.filter((r) => r.status === 422 || r.status === 429).length,
    peak,
    regions: byRegion.size,
  };
}
