// What every browser test checks besides its own steps: no request leaves 127.0.0.1, no
// console errors; plus helpers for the REST API (to check what the UI did), accessibility
// checks with axe-core, and screenshots.

import { test as base, expect, type Locator, type Page } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';

function required(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run these tests through \`cargo test -p toolsmith --test ui -- --include-ignored\``);
  return v;
}

export const env = {
  get url() {
    return required('TOOLSMITH_UI_URL');
  },
  /** The open server's local admin token: it was given no token (as `serve` prints it). */
  get localToken() {
    return required('TOOLSMITH_UI_LOCAL_TOKEN');
  },
  get lockedUrl() {
    return required('TOOLSMITH_UI_LOCKED_URL');
  },
  get readToken() {
    return required('TOOLSMITH_UI_READ_TOKEN');
  },
  get adminToken() {
    return required('TOOLSMITH_UI_ADMIN_TOKEN');
  },
  /** A stdio MCP server (Python, standard library only) with one read-only tool, `ping`. */
  get tinyServer() {
    return required('TOOLSMITH_UI_TINY_SERVER');
  },
  /** The FastAPI test application (its /openapi.json), on 127.0.0.1. */
  get fastapi() {
    return required('TOOLSMITH_UI_FASTAPI_URL');
  },
  /** The Python of the test environment (FastAPI, FastMCP) and the FastMCP test server. */
  get python() {
    return required('TOOLSMITH_UI_PYTHON');
  },
  get fastmcpServer() {
    return required('TOOLSMITH_UI_FASTMCP_SERVER');
  },
  get shots() {
    return process.env.TOOLSMITH_UI_SHOTS ?? 'test-results';
  },
};

export const test = base.extend<{ watch: void }>({
  watch: [
    async ({ page }, use) => {
      // Signed in to the open server as its one-click address does (`/#token=...` moves the
      // token into the tab's sessionStorage); the locked server still asks.
      await page.addInitScript(
        ({ origin, local }) => {
          if (window.location.origin === origin && !sessionStorage.getItem('toolsmith.token')) {
            sessionStorage.setItem('toolsmith.token', local);
          }
        },
        { origin: new URL(env.url).origin, local: env.localToken },
      );
      const foreign: string[] = [];
      const errors: string[] = [];
      page.on('request', (r) => {
        const u = new URL(r.url());
        if (!['http:', 'https:', 'ws:', 'wss:'].includes(u.protocol)) return;
        if (u.hostname !== '127.0.0.1') foreign.push(r.url());
      });
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      page.on('pageerror', (e) => errors.push(String(e)));
      await use();
      expect(foreign, 'requests that left 127.0.0.1').toEqual([]);
      // A 401/403/409/422 a test provokes on purpose is logged by the browser as a failed
      // resource.
      expect(errors.filter((e) => !/status of (40[139]|422)/.test(e)), 'console errors').toEqual([]);
    },
    { auto: true },
  ],
});

export { expect };

/** A REST request to the server without tokens (with its local admin token). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- test assertions read any field
export async function rest(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const r = await fetch(`${env.url}/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${env.localToken}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: r.status, json };
}

/** Chooses `option` in the antd select labelled `label` (the `nth` one), and waits until the
 * select shows it chosen. On a loaded machine a click can land on an option still sliding in
 * and miss; then the dropdown is opened and the option clicked again (never a second time once
 * it is chosen, which would take it out of a multiple select). */
export async function choose(page: Page, label: string, option: string, nth = 0): Promise<void> {
  const select = page.locator('.ant-select').filter({ has: page.getByLabel(label, { exact: true }) }).nth(nth);
  const chosen = select.locator(`[title=${JSON.stringify(option)}]`);
  await expect(async () => {
    if (await chosen.count()) return;
    const open = page.locator('.ant-select-dropdown:visible');
    if (!(await open.count())) await page.getByLabel(label, { exact: true }).nth(nth).click();
    await open.getByTitle(option, { exact: true }).click({ timeout: 5_000 });
    await expect(chosen).not.toHaveCount(0, { timeout: 2_000 });
  }).toPass({ timeout: 30_000 });
}

/** No serious or critical accessibility violation on the page as it is. */
export async function accessible(page: Page, what: string): Promise<void> {
  // Colours are judged as they rest: the pointer off any control (hover colours are
  // lighter), and opening animations (which fade elements in) over.
  await page.mouse.move(0, 0);
  // Colours are judged once opening animations (which fade elements in) are over. Only
  // visible elements count: a hidden one left with a motion class (a tooltip whose leave was
  // cut short) is not on screen and not judged.
  await expect(
    page.locator('[class*="-appear"], [class*="-enter"], [class*="-leave"]').filter({ visible: true }),
  ).toHaveCount(0);
  const result = await new AxeBuilder({ page }).analyze();
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(
    bad.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join('; ')}`),
    `accessibility of ${what}`,
  ).toEqual([]);
}

/** No colour contrast falls short while the pointer is on `target` (a hovered button or link
 *  takes its hover shades): judged with transitions off, so the colours are the final ones. */
export async function accessibleHovered(page: Page, target: Locator, what: string): Promise<void> {
  const style = await page.addStyleTag({ content: '*, *::before, *::after { transition: none !important; animation: none !important; }' });
  await target.hover();
  const result = await new AxeBuilder({ page }).withRules(['color-contrast', 'link-in-text-block']).analyze();
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(
    bad.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => `${n.target.join(' ')} ${n.failureSummary ?? ''}`).slice(0, 3).join('; ')}`),
    `accessibility of ${what}, hovered`,
  ).toEqual([]);
  await page.mouse.move(0, 0);
  await style.evaluate((node) => (node as Element).remove());
}

export async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: `${env.shots}/${name}.png`, fullPage: true });
}
