// Browser tests: Debian's Chromium driven by a pinned Playwright (which cannot download its
// own browsers here). `cargo test -p toolsmith --test ui -- --include-ignored` starts the
// servers and runs these with their addresses in the environment.
import { defineConfig } from '@playwright/test';

export default defineConfig({
  testDir: 'e2e',
  // Generous: the suite must hold on a busy 2-core machine (CI builds beside it).
  timeout: 120_000,
  expect: { timeout: 10_000 },
  retries: 0,
  // `TOOLSMITH_UI_GREP=playground cargo test -p toolsmith --test ui -- --include-ignored` runs
  // only the tests whose titles match.
  ...(process.env.TOOLSMITH_UI_GREP ? { grep: new RegExp(process.env.TOOLSMITH_UI_GREP) } : {}),
  workers: 1,
  reporter: [['list']],
  outputDir: 'test-results',
  use: {
    viewport: { width: 1280, height: 800 },
    screenshot: 'only-on-failure',
    launchOptions: {
      executablePath: process.env.TOOLSMITH_TEST_CHROMIUM ?? '/usr/bin/chromium',
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
});
