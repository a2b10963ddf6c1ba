// Measures the tool list page in headless Chromium: the JavaScript it loads at first (bytes
// on the wire, compressed) and the time from navigation until the first page of tools is
// shown and the search box takes input. Usage (a `serve` must be running):
//   node scripts/measure.mjs http://127.0.0.1:7700 [runs]
import { chromium } from 'playwright-core';

const base = process.argv[2] ?? 'http://127.0.0.1:7700';
const runs = Number(process.argv[3] ?? 5);
const browser = await chromium.launch({
  executablePath: process.env.TOOLSMITH_TEST_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const times = [];
let js = 0;
for (let i = 0; i < runs; i++) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  let bytes = 0;
  const types = new Map();
  cdp.on('Network.responseReceived', (e) => types.set(e.requestId, e.type));
  cdp.on('Network.loadingFinished', (e) => {
    if (types.get(e.requestId) === 'Script') bytes += e.encodedDataLength;
  });
  const t0 = Date.now();
  await page.goto(`${base}/ui/tools`);
  await page.locator('table tbody tr a').first().waitFor();
  await page.getByLabel('Search tools').fill('x');
  times.push(Date.now() - t0);
  js = bytes;
  await context.close();
}
await browser.close();
times.sort((a, b) => a - b);
console.log(JSON.stringify({ runs, js_kib_on_the_wire: Math.round(js / 1024), ms_to_interactive: times, median_ms: times[Math.floor(times.length / 2)] }));
