// The editor against a real `serve`: create, edit, version, restore and delete tools in the
// browser — each result checked through the REST API — and no edit ever lost.

import { accessible, choose, env, expect, rest, shot, test } from './fixtures';

test.describe.configure({ mode: 'serial' });

test('a command tool with two parameters, made in the form', async ({ page }) => {
  await page.goto(`${env.url}/ui/tools`);
  await page.getByRole('button', { name: 'New tool' }).click();
  await expect(page).toHaveURL(/\/ui\/new$/);
  await page.getByLabel('Name', { exact: true }).fill('greet_twice');
  await page.getByLabel('Description', { exact: true }).fill('Greet someone, a number of times.');
  await page.getByLabel('Command', { exact: true }).fill('echo');
  await page.getByRole('button', { name: 'Add argument' }).click();
  await page.getByLabel('Argument 1', { exact: true }).fill('hello');
  await page.getByRole('button', { name: 'Add parameter' }).click();
  await page.getByLabel('Parameter name').nth(0).fill('who');
  await page.getByRole('button', { name: 'Add parameter' }).click();
  await page.getByLabel('Parameter name').nth(1).fill('count');
  await choose(page, 'Type', 'integer', 1);
  // The live example of how it reaches the command, and the preview of the whole call.
  await expect(page.getByTestId('injection-example').nth(1)).toHaveText('10');
  await page.getByLabel('Sample arguments (JSON)').fill('{"who": "world", "count": "3"}');
  await expect(page.getByTestId('plan-argv')).toHaveText('echo hello world 3');
  await expect(page.getByText('✓ No problems')).toBeVisible();
  await accessible(page, 'the editor');
  await shot(page, 'editor');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page).toHaveURL(/\/ui\/tools\/greet_twice$/);
  const saved = await rest('GET', '/tools/greet_twice');
  expect(saved.json.version).toBe(1);
  expect(saved.json.definition.command).toEqual(['echo', 'hello']);
  expect(saved.json.definition.parameters).toEqual([{ name: 'who', type: 'string' }, { name: 'count', type: 'integer' }]);
  const called = await rest('POST', '/tools/greet_twice/call', { arguments: { who: 'world', count: 3 } });
  expect(called.json.data.stdout).toBe('hello world 3\n');
});

test('an edit saves a new version, and a conflicting edit never loses the draft', async ({ page }) => {
  await page.goto(`${env.url}/ui/tools/greet_twice`);
  await page.getByRole('button', { name: 'Edit' }).click();
  await page.getByLabel('Description', { exact: true }).fill('Greet someone, several times.');
  // Ctrl+S saves.
  await page.getByLabel('Description', { exact: true }).press('Control+s');
  await expect(page).toHaveURL(/\/ui\/tools\/greet_twice$/);
  expect((await rest('GET', '/tools/greet_twice')).json.version).toBe(2);

  await page.getByRole('button', { name: 'Edit' }).click();
  await page.getByLabel('Description', { exact: true }).fill('Changed in the browser.');
  // Meanwhile another client saves version 3.
  const current = (await rest('GET', '/tools/greet_twice')).json.definition;
  const other = await fetch(`${env.url}/v1/tools/greet_twice`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', 'if-match': '2', authorization: `Bearer ${env.localToken}` },
    body: JSON.stringify({ ...current, title: 'Set elsewhere' }),
  });
  expect(other.status).toBe(200);
  await page.getByRole('button', { name: 'Save' }).click();
  const dialog = page.getByRole('dialog');
  await expect(dialog).toContainText('changed on the server');
  await expect(dialog.getByRole('cell', { name: 'title' })).toBeVisible();
  await accessible(page, 'the conflict dialog');
  await shot(page, 'conflict');
  await dialog.getByRole('button', { name: 'Keep editing' }).click();
  await expect(page.getByLabel('Description', { exact: true })).toHaveValue('Changed in the browser.');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Reload and re-apply my changes' }).click();
  // The draft now stands on version 3 (saving before that would conflict again).
  await expect(page.getByText('editing version 3')).toBeVisible({ timeout: 30_000 });
  await expect(page.getByLabel('Description', { exact: true })).toHaveValue('Changed in the browser.');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page).toHaveURL(/\/ui\/tools\/greet_twice$/);
  const after = (await rest('GET', '/tools/greet_twice')).json;
  expect([after.version, after.definition.description, after.definition.title]).toEqual([4, 'Changed in the browser.', 'Set elsewhere']);
});

test('restoring version 1 makes a new version equal to it, and texts compare side by side', async ({ page }) => {
  await page.goto(`${env.url}/ui/tools/greet_twice?tab=history`);
  await page.getByRole('button', { name: 'Restore version 1' }).click();
  const confirm = page.getByRole('dialog', { name: 'Restore version 1?' });
  await confirm.getByRole('button', { name: 'Restore' }).click();
  // What the page says is the outcome (a failed restore says why); the dialog closes after it.
  await expect(page.getByText(/version 1 (restored as version 5|was not restored.*)/)).toHaveText('version 1 restored as version 5', { timeout: 30_000 });
  await expect(confirm).toBeHidden();
  expect((await rest('GET', '/tools/greet_twice')).json.version).toBe(5);
  expect((await rest('GET', '/tools/greet_twice/diff?from=1&to=5')).json.changes).toEqual([]);
  await choose(page, 'Compare from version', 'version 2');
  await page.getByRole('button', { name: 'Compare as text' }).click();
  // The side-by-side view is a lazily loaded chunk (Monaco's diff editor): slow on a busy machine.
  await expect(page.getByRole('group', { name: /Text difference/ })).toContainText('several times', { timeout: 30_000 });
  await shot(page, 'history');
});

test('a script tool typed into Monaco runs from the test panel', async ({ page }) => {
  await page.goto(`${env.url}/ui/new`);
  await page.getByLabel('Name', { exact: true }).fill('shout');
  await page.getByLabel('Description', { exact: true }).fill('Shout a text.');
  await page.locator('label.ant-radio-button-wrapper', { hasText: 'script' }).click();
  const editor = page.getByRole('group', { name: 'Script' });
  await expect(editor.locator('.monaco-editor')).toBeVisible();
  await editor.locator('.monaco-editor .view-lines').click();
  await page.keyboard.press('Control+a');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText('import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({"shout": args["text"].upper()}))\n');
  await page.getByRole('button', { name: 'Add parameter' }).click();
  await page.getByLabel('Parameter name').fill('text');
  // Python scripts run warm unless told otherwise; this one opts out.
  await expect(page.getByLabel('Warm runtime', { exact: true })).toBeVisible();
  await choose(page, 'Warm runtime', 'off: a fresh interpreter per call');
  await expect(page.getByText('✓ No problems')).toBeVisible();
  await shot(page, 'editor-script');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page).toHaveURL(/\/ui\/tools\/shout$/);
  const saved = (await rest('GET', '/tools/shout')).json.definition.script;
  expect(saved.source).toContain('args["text"].upper()');
  expect(saved.warm).toBe(false);
  await expect(page.getByText('a fresh interpreter per call (warm: false)')).toBeVisible();
  await page.getByRole('tab', { name: 'Test' }).click();
  await page.getByLabel('text', { exact: true }).fill('hello');
  await page.getByRole('button', { name: 'Run' }).click();
  await expect(page.getByRole('region', { name: 'Result' })).toContainText('shout: "HELLO"');
});

test('a pasted JSON Schema becomes parameters; a bad regex is shown at its field and blocks saving', async ({ page }) => {
  await page.goto(`${env.url}/ui/new`);
  await page.getByLabel('Name', { exact: true }).fill('from_schema');
  await page.getByLabel('Description', { exact: true }).fill('Made from a schema.');
  await page.getByLabel('Command', { exact: true }).fill('echo');
  await page.getByRole('button', { name: 'Paste JSON Schema' }).click();
  await page.getByLabel('JSON Schema', { exact: true }).fill(
    JSON.stringify({ type: 'object', properties: { query: { type: 'string', minLength: 1 }, limit: { type: 'integer', maximum: 50 }, either: { anyOf: [{ type: 'string' }] } }, required: ['query'] }),
  );
  await expect(page.getByRole('dialog')).toContainText('anyOf is not supported');
  await page.getByRole('button', { name: 'Use these parameters' }).click();
  await expect(page.getByText('query', { exact: true })).toBeVisible();
  await expect(page.getByText('limit', { exact: true })).toBeVisible();
  // Open the first parameter and give it a broken pattern.
  await page.getByText('query', { exact: true }).click();
  await page.getByLabel('Pattern', { exact: true }).fill('([unclosed');
  await expect(page.getByRole('alert').filter({ hasText: 'invalid regular expression' }).first()).toBeVisible();
  await expect(page.getByRole('button', { name: 'Save' })).toBeDisabled();
  await accessible(page, 'the editor with a problem');
  // Leaving asks first.
  await page.getByRole('link', { name: 'Tools', exact: true }).click();
  await expect(page.getByRole('dialog')).toContainText('Leave without saving?');
  await page.getByRole('button', { name: 'Leave and lose the changes' }).click();
  await expect(page).toHaveURL(/\/ui\/tools$/);
  expect((await rest('GET', '/tools/from_schema')).status).toBe(404);
});

test('secret config values never come back to the browser', async ({ page }) => {
  const seen: string[] = [];
  page.on('response', async (r) => {
    const body = await r.text().catch(() => '');
    if (body.includes('supersecret-123')) seen.push(r.url());
  });
  await page.goto(`${env.url}/ui/new`);
  await page.getByLabel('Name', { exact: true }).fill('with_secret');
  await page.getByLabel('Description', { exact: true }).fill('Uses a key.');
  await page.getByLabel('Command', { exact: true }).fill('printenv');
  await page.getByRole('button', { name: 'Add argument' }).click();
  await page.getByLabel('Argument 1', { exact: true }).fill('API_KEY');
  await page.getByRole('button', { name: 'Add config field' }).click();
  await page.getByLabel('Parameter name').fill('api_key');
  await page.getByLabel('Secret', { exact: true }).check();
  await page.getByLabel('Environment variable').fill('API_KEY');
  await page.getByLabel('Config api_key').fill('supersecret-123');
  await page.getByLabel('Sample arguments (JSON)').fill('{}');
  await expect(page.getByTestId('plan-argv')).toHaveText('printenv API_KEY');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page).toHaveURL(/\/ui\/tools\/with_secret$/);
  await page.getByRole('button', { name: 'Edit' }).click();
  await expect(page.getByLabel('Config api_key')).toHaveValue('***');
  await page.getByLabel('Description', { exact: true }).fill('Uses a key, still.');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page).toHaveURL(/\/ui\/tools\/with_secret$/);
  await page.getByRole('tab', { name: 'History' }).click();
  await page.getByRole('tab', { name: 'Formats' }).click();
  expect(seen, 'responses that carried the secret').toEqual([]);
  // The tool still has it: a call through REST prints it (as many bytes), and what it
  // printed of its secret reaches the caller as ***.
  const called = await rest('POST', '/tools/with_secret/call', { arguments: {} });
  expect(called.json.data.stdout).toBe('***\n');
  expect(called.json.meta.stdout_bytes).toBe('supersecret-123\n'.length);
});

test('deleting asks for the name, and the history stays', async ({ page }) => {
  await page.goto(`${env.url}/ui/tools/shout`);
  await page.getByRole('button', { name: 'Delete' }).click();
  const dialog = page.getByRole('dialog');
  await expect(dialog.getByRole('button', { name: 'Delete' })).toBeDisabled();
  await dialog.getByLabel('Tool name to delete').fill('shout');
  await dialog.getByRole('button', { name: 'Delete' }).click();
  await expect(page).toHaveURL(/\/ui\/tools$/);
  // The page leaves first and deletes then: the deletion is done once it says so.
  await expect(page.getByText('shout deleted')).toBeVisible();
  expect((await rest('GET', '/tools/shout')).status).toBe(404);
  expect((await rest('GET', '/tools/shout/versions')).json.versions.length).toBeGreaterThan(0);
});
