'use strict';

// Headless Chromium for the page tests: Debian's chromium driven by playwright-core (which
// downloads no browser). Outside CI, a machine without chromium skips these tests with the
// reason; in CI (.ci/run installs chromium) a missing browser fails them.

const fs = require('node:fs');
const path = require('node:path');

const CHROMIUM = process.env.UVSCOPE_CHROMIUM || '/usr/bin/chromium';
// Without these, Chromium reaches for Google's hosts at start and on a timer; this machine has no
// network, and the page must work without it.
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-default-apps', '--disable-extensions'];
const SCREENSHOTS = path.join(__dirname, '..', '..', 'test-output', 'screenshots');

/**
 * Skip the calling suite (outside CI) when there is no browser; fail in CI.
 * @param {import('mocha').Context} mochaContext
 */
function requireBrowser(mochaContext) {
  let reason = null;
  if (!fs.existsSync(CHROMIUM)) reason = `no browser at ${CHROMIUM} (apt-get install chromium, or set UVSCOPE_CHROMIUM)`;
  else {
    try {
      require.resolve('playwright-core');
    } catch {
      reason = 'playwright-core is not installed (npm install)';
    }
  }
  if (!reason) return;
  if (process.env.CI) throw new Error(`the page tests need a browser in CI: ${reason}`);
  console.log(`      skipped: ${reason}`);
  mochaContext.skip();
}

/**
 * A browser whose pages may only reach 127.0.0.0/8 (anything else is aborted and recorded), and
 * that records console errors and page errors.
 */
async function launchBrowser() {
  const { chromium } = require('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  return {
    browser,
    /**
     * @param {{ width?: number, height?: number }} [viewport]
     * @returns {Promise<{ page: import('playwright-core').Page, errors: string[], blocked: string[] }>}
     */
    async open(viewport = { width: 1280, height: 800 }) {
      const context = await browser.newContext({ viewport });
      const page = await context.newPage();
      const errors = [];
      const blocked = [];
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      page.on('pageerror', (e) => errors.push(e.message));
      await context.route('**/*', (route) => {
        const url = new URL(route.request().url());
        if (url.protocol === 'file:' || url.protocol === 'data:' || url.hostname === '127.0.0.1' || url.hostname === 'localhost') return route.continue();
        blocked.push(url.href);
        return route.abort();
      });
      return { page, errors, blocked };
    },
    close: () => browser.close(),
  };
}

/**
 * The calling suite's browser: launched before its tests (the suite skips or fails as
 * requireBrowser() says when there is none) and closed after them.
 * @returns {{ open: (viewport?: { width?: number, height?: number }) => ReturnType<Awaited<ReturnType<typeof launchBrowser>>['open']> }}
 */
function useBrowser() {
  /** @type {Awaited<ReturnType<typeof launchBrowser>> | null} */
  let browser = null;
  before(async function () {
    requireBrowser(this);
    browser = await launchBrowser();
  });
  after(async () => {
    if (browser) await browser.close();
  });
  return {
    open: (viewport) => {
      if (!browser) throw new Error('useBrowser(): no browser before the suite\'s before() hook ran');
      return browser.open(viewport);
    },
  };
}

/**
 * Save a screenshot into test-output/screenshots (kept after the run).
 * @param {import('playwright-core').Page} page
 * @param {string} name
 */
async function screenshot(page, name) {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  const file = path.join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

module.exports = { useBrowser, requireBrowser, launchBrowser, screenshot, SCREENSHOTS };
