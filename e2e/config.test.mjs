// The config editor in Chromium: auth types, a secret reset, and Save & test through the
// host's health route to the plugin binary's CheckHealth against the emulator.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { openEditor, screenshot, sharedBrowser } from './browser.mjs';

const chromium = sharedBrowser();

/** Clicks Save & test and returns the health alert's status and text. */
async function saveAndTest(page) {
  await page.getByRole('button', { name: 'Save & test' }).click();
  const health = page.getByTestId('health');
  await health.waitFor();
  return { status: await health.getAttribute('data-status'), text: await health.innerText() };
}

/** Picks an option of @grafana/ui's Select (react-select) by the field's label. */
async function pickAuth(page, label) {
  await page.getByRole('combobox', { name: 'Authentication Provider' }).click();
  await page.getByRole('option', { name: label, exact: true }).click();
}

test('config editor: auth types, secret reset, Save & test', async () => {
  const { page, errors } = await openEditor(chromium.browser, 'config');

  // Provisioned with static keys: both secrets show as configured, never their values.
  await page.getByText('Access & secret key').waitFor();
  assert.equal(await page.locator('#accessKeyId').getAttribute('placeholder'), 'Configured');
  assert.ok(await page.getByLabel('Session token').isVisible(), 'session token field shown for keys');
  await screenshot(page, 'config-1-keys-configured');

  let health = await saveAndTest(page);
  assert.equal(health.status, 'success', health.text);
  assert.match(health.text, /SageMaker metrics are present/);
  await screenshot(page, 'config-2-save-and-test-ok');

  // Credentials file: the profile field replaces the key fields and the session token.
  await pickAuth(page, 'Credentials file');
  await page.getByLabel('Credentials Profile Name').fill('no-such-profile');
  assert.equal(await page.locator('#accessKeyId').count(), 0, 'access key field hidden for a credentials file');
  assert.equal(await page.getByLabel('Session token').count(), 0, 'session token hidden for a credentials file');
  health = await saveAndTest(page);
  assert.equal(health.status, 'error', health.text);
  assert.match(health.text, /no-such-profile/, 'the failing profile is named');
  await screenshot(page, 'config-3-credentials-file-error');

  // Back to keys: the stored secrets were kept through the save, so the check passes again.
  await pickAuth(page, 'Access & secret key');
  health = await saveAndTest(page);
  assert.equal(health.status, 'success', health.text);

  // Reset the secret key and save a wrong one: CloudWatch (the emulator) refuses the signature,
  // the message says what to fix, and the secret typed never comes back to the page.
  const wrongSecret = 'wRoNgSeCrEt0123456789abcdefghijklmnopqrst';
  await page.locator('button#secretKey').click();
  const secret = page.locator('input#secretKey');
  assert.equal(await secret.inputValue(), '', 'a reset secret starts empty');
  await secret.fill(wrongSecret);
  await screenshot(page, 'config-4-secret-reset');
  health = await saveAndTest(page);
  assert.equal(health.status, 'error', health.text);
  assert.match(health.text, /secret|signature|credential/i);
  assert.ok(!(await page.content()).includes(wrongSecret), 'the saved secret is not shown on the page');
  assert.equal(await page.locator('#accessKeyId').getAttribute('placeholder'), 'Configured');
  await screenshot(page, 'config-5-wrong-secret-error');

  assert.deepEqual(errors, []);
});
