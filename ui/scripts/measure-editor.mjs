// Typing latency in the editor on a tool with fifty parameters (the figure in
// bench/README.md): from a change to a field until the next frame is drawn, with every
// parameter closed and with every one open. Usage, with `serve` running and a tool named
// `fifty` in it (see bench/README.md):  node scripts/measure-editor.mjs http://127.0.0.1:7700
import { chromium } from 'playwright-core';

const base = process.argv[2] ?? 'http://127.0.0.1:7700';
const browser = await chromium.launch({
  executablePath: process.env.TOOLSMITH_TEST_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
let t0 = Date.now();
await page.goto(`${base}/ui/tools/fifty/edit`);
await page.getByLabel('Description', { exact: true }).waitFor();
const opened = Date.now() - t0;
const measure = (selector) =>
  page.evaluate(async (sel) => {
    const el = document.querySelectorAll(sel)[0];
    const out = [];
    for (let i = 0; i < 30; i++) {
      const t = performance.now();
      const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
      Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, el.value + 'x');
      el.dispatchEvent(new Event('input', { bubbles: true }));
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
      out.push(performance.now() - t);
    }
    out.sort((a, b) => a - b);
    return { median_ms: +out[15].toFixed(1), p90_ms: +out[27].toFixed(1) };
  }, selector);
const closed = await measure('#tool-description');
t0 = Date.now();
await page.evaluate(() => document.querySelectorAll('main button[aria-expanded="false"]').forEach((b) => b.click()));
await page.locator('input[aria-label="Parameter name"]').nth(49).waitFor();
const openAll = Date.now() - t0;
const description = await measure('#tool-description');
const name = await measure('input[aria-label="Parameter name"]');
console.log(JSON.stringify({ editor_open_ms: opened, closed_typing: closed, open_all_50_ms: openAll, all_open_typing_description: description, all_open_typing_parameter_name: name }));
await browser.close();
