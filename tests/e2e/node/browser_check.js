// SPDX-License-Identifier: MIT
// Drives Debian's chromium through playwright-core for tests/e2e/test_formats.py and prints
// one JSON object with what it saw. Never downloads a browser.
//
//   node browser_check.js flame PAGE.html SHOT.png [SEARCH [CLICK [PROBES]]]
//     loads pywalk's HTML flame graph: errors, load time, the root's tooltip, a click
//     zoom on the first frame whose label contains CLICK, a search for SEARCH; PROBES, a
//     JSON object {"frames": [TEXT...], "searches": [QUERY...]}, zooms into each frame
//     (found by label, as it is or as shown) and reads what the page then shows of it:
//     breadcrumbs, its tooltip and every canvas label drawn; then runs each search
//   node browser_check.js svg FILE.svg SHOT.png CLICK SEARCH
//     loads pywalk's SVG flame graph: errors, the elements and scripts in the document,
//     the boxes drawn, a real click on the first box whose label starts with CLICK (then
//     what is shown), a search for SEARCH through the Search prompt, then Reset zoom
//   node browser_check.js speedscope URL SHOT.png
//     loads speedscope (URL carries #profileURL=...): errors, title, visible text
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");

const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

async function withPage(fn) {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "pywalk-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM, headless: true, args: ARGS,
    viewport: { width: 1400, height: 900 },
  });
  const out = { consoleErrors: [], pageErrors: [], requests: [] };
  try {
    const page = context.pages()[0] || await context.newPage();
    page.on("console", (m) => { if (m.type() === "error") out.consoleErrors.push(m.text()); });
    page.on("pageerror", (e) => out.pageErrors.push(String(e)));
    page.on("request", (r) => out.requests.push(r.url().slice(0, 200)));
    await fn(page, out);
  } finally {
    await context.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
  return out;
}

// Every string the page draws on a canvas, collected before its script runs.
function recordCanvasText() {
  window.__pywalkDrawn = new Set();
  const fill = CanvasRenderingContext2D.prototype.fillText;
  CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
    window.__pywalkDrawn.add(String(text));
    return fill.call(this, text, ...rest);
  };
}

async function searchFor(page, q) {
  await page.fill("#search", q);
  await page.waitForFunction((lq) => window.pywalkFlame.query() === lq, q.toLowerCase(),
    { timeout: 10000 });
  return { query: q, matched: await page.evaluate(() => window.pywalkFlame.matched()),
    matchText: await page.textContent("#match") };
}

async function probeFrames(page, out, probes) {
  out.frames = [];
  for (const text of probes.frames || []) {
    const res = { text };
    out.frames.push(res);
    await page.keyboard.press("Escape"); // back to the whole graph
    let box = await page.evaluate((t) => window.pywalkFlame.find(t), text);
    if (!box) continue;
    await page.evaluate(() => window.__pywalkDrawn.clear());
    await page.mouse.click(box.x, box.y);
    res.label = box.label;
    res.crumbs = await page.textContent("#crumbs");
    // zoomed, the frame spans the width: its label is drawn whole
    box = await page.evaluate((t) => window.pywalkFlame.find(t), text);
    if (box) {
      await page.mouse.move(box.x, box.y);
      res.tooltip = await page.textContent("#tooltip");
      res.details = await page.textContent("#details");
    }
    res.drawn = await page.evaluate(() => Array.from(window.__pywalkDrawn));
  }
  await page.keyboard.press("Escape");
  // the thread filter: each choice, its total and which of the names it draws
  if (probes.who) {
    out.who = [];
    const choices = await page.evaluate(() => window.pywalkFlame.whoChoices());
    for (const [value, text] of choices) {
      await page.selectOption("#who", value);
      out.who.push(await page.evaluate(([v, t, names]) => {
        const f = window.pywalkFlame;
        const drawn = {};
        for (const name of names) drawn[name] = f.find(name + " (") !== null;
        return { value: v, text: t, who: f.who(), total: f.viewTotal(), drawn,
          meta: document.getElementById("meta").textContent };
      }, [value, text, probes.who]));
    }
    await page.selectOption("#who", "all");
  }
  out.searches = [];
  for (const q of probes.searches || []) out.searches.push(await searchFor(page, q));
  out.heading = await page.textContent("#title");
}

async function flame(file, shot, searchText, clickText, probes) {
  return withPage(async (page, out) => {
    await page.addInitScript(recordCanvasText);
    const t0 = Date.now();
    await page.goto("file://" + path.resolve(file));
    await page.waitForFunction(() => window.pywalkFlame !== undefined, null, { timeout: 60000 });
    out.loadMs = Date.now() - t0;
    out.renderedAtMs = await page.evaluate(() => window.pywalkFlame.renderedAt);
    out.total = await page.evaluate(() => window.pywalkFlame.total);
    out.nodes = await page.evaluate(() => window.pywalkFlame.nodes);
    out.pwned = await page.evaluate(() => typeof window.__pwned);
    out.title = await page.title();
    out.meta = await page.textContent("#meta");

    const root = await page.evaluate(() => window.pywalkFlame.find(""));
    // which way up: the root's row against the first frame above it
    out.orientation = await page.evaluate(() => window.pywalkFlame.orientation());
    out.invertText = await page.textContent("#invert");
    out.rootY = root && root.y;
    out.childY = await page.evaluate(() => { const c = window.pywalkFlame.find(" ("); return c && c.y; });
    if (root) {
      await page.mouse.move(root.x, root.y);
      out.rootTooltip = await page.textContent("#tooltip");
      out.rootTooltipVisible = await page.isVisible("#tooltip");
    }
    if (clickText) {
      const box = await page.evaluate((t) => window.pywalkFlame.find(t), clickText);
      out.clickTarget = box && box.label;
      if (box) {
        const t1 = Date.now();
        await page.mouse.click(box.x, box.y);
        out.zoomMs = Date.now() - t1;
        out.zoomed = await page.evaluate(() => window.pywalkFlame.zoomed());
        out.crumbs = await page.textContent("#crumbs");
      }
    }
    if (searchText) {
      await page.fill("#search", searchText);
      await page.waitForFunction(() => window.pywalkFlame.matched() !== null, null,
        { timeout: 10000 });
      out.matched = await page.evaluate(() => window.pywalkFlame.matched());
      out.matchText = await page.textContent("#match");
    }
    if (probes) await probeFrames(page, out, JSON.parse(probes));
    await page.screenshot({ path: shot });
    // the toggle turns it into an icicle, root at the top
    await page.click("#invert");
    out.orientationAfter = await page.evaluate(() => window.pywalkFlame.orientation());
    out.invertTextAfter = await page.textContent("#invert");
    out.rootYAfter = await page.evaluate(() => { const r = window.pywalkFlame.find(""); return r && r.y; });
    out.childYAfter = await page.evaluate(() => { const c = window.pywalkFlame.find(" ("); return c && c.y; });
    // by line / by function: the tree as --function would write it, then back
    // (how many frames start with CLICK, each way, and the first one's label)
    out.byFunc = await page.evaluate((t) => {
      const f = window.pywalkFlame, before = f.nodeCount(), clickBefore = f.countLabels(t);
      document.getElementById("byfunc").click();
      const res = { before, after: f.nodeCount(), on: f.byFunction(), total: f.total,
        clickBefore, clickAfter: f.countLabels(t), clickLabel: f.find(t) && f.find(t).label,
        text: document.getElementById("byfunc").textContent, zoomed: f.zoomed() };
      document.getElementById("byfunc").click();
      res.back = f.nodeCount();
      return res;
    }, clickText || "");
    // the sandwich of the first frame with CLICK in its label: its callers, its callees
    if (clickText) {
      const box = await page.evaluate((t) => window.pywalkFlame.find(t), clickText);
      if (box) {
        await page.mouse.click(box.x, box.y);
        out.sandwich = { zoomedTotal: await page.evaluate(() => window.pywalkFlame.zoomedTotal()) };
        for (const which of ["callers", "callees"]) {
          await page.evaluate(() => window.__pywalkDrawn.clear());
          await page.click("#" + which);
          out.sandwich[which] = await page.evaluate(() => {
            const f = window.pywalkFlame;
            return { view: f.view(), total: f.viewTotal(), nodes: f.nodeCount(),
              root: f.rootChild(), crumbs: document.getElementById("crumbs").textContent };
          });
          out.sandwich[which].drawn = await page.evaluate(() => Array.from(window.__pywalkDrawn));
        }
        await page.click("#tree");
        out.sandwich.back = await page.evaluate(() => ({ view: window.pywalkFlame.view(),
          nodes: window.pywalkFlame.nodeCount() }));
      }
    }
  });
}

// What the SVG shows now: boxes drawn (not hidden, with a width) and their labels.
function svgState() {
  const shown = Array.from(document.querySelectorAll("g.f")).filter(
    (g) => g.style.display !== "none" && g.querySelector("rect").getBBox().width > 0);
  return {
    visible: shown.length,
    texts: shown.map((g) => g.querySelector("text").textContent).filter((t) => t),
    highlighted: shown.filter((g) => g.querySelector("rect").getAttribute("fill") ===
      "rgb(230,0,230)").length,
  };
}

async function svg(file, shot, clickText, searchText) {
  return withPage(async (page, out) => {
    await page.goto("file://" + path.resolve(file));
    await page.waitForFunction(() => window.pywalkSvg !== undefined, null, { timeout: 30000 });
    out.pwned = await page.evaluate(() => typeof window.__pwned);
    out.elements = await page.evaluate(() => Array.from(new Set(
      Array.from(document.getElementsByTagName("*")).map((e) => e.namespaceURI + " " + e.localName))));
    out.scripts = await page.evaluate(() => document.getElementsByTagName("script").length);
    out.boxes = await page.evaluate(() => document.querySelectorAll("g.f").length);
    out.rootWidth = await page.evaluate(() =>
      document.querySelector('g.f[data-d="0"] rect').getBoundingClientRect().width);
    out.before = await page.evaluate(svgState);
    const i = await page.evaluate((t) => Array.from(document.querySelectorAll("g.f")).findIndex(
      (g) => g.querySelector("title").textContent.startsWith(t)), clickText);
    if (i >= 0) {
      const g = page.locator("g.f").nth(i);
      out.clickTarget = await g.locator("title").textContent();
      await g.locator("rect").click();
      out.zoomed = await page.evaluate(() => window.pywalkSvg.zoomed());
      out.zoomedWidth = await g.locator("rect").evaluate((r) => +r.getAttribute("width"));
      out.zoomedText = await g.locator("text").textContent();
      out.afterZoom = await page.evaluate(svgState);
    }
    page.once("dialog", (d) => d.accept(searchText));
    await page.locator("#search").click();
    await page.waitForFunction(() => window.pywalkSvg.matched() !== null, null, { timeout: 10000 });
    out.matched = await page.evaluate(() => window.pywalkSvg.matched());
    out.matchText = await page.textContent("#matched");
    out.afterSearch = await page.evaluate(svgState);
    await page.screenshot({ path: shot });
    await page.locator("#reset").click();
    out.afterReset = await page.evaluate(svgState);
    out.zoomedAfterReset = await page.evaluate(() => window.pywalkSvg.zoomed());
  });
}

async function speedscope(url, shot) {
  return withPage(async (page, out) => {
    await page.goto(url);
    // speedscope names the tab after the profile once it has imported it
    await page.waitForFunction(() => / - speedscope$/.test(document.title), null,
      { timeout: 30000 }).catch((e) => out.pageErrors.push("no profile title: " + e.message));
    await page.waitForTimeout(500);
    out.title = await page.title();
    out.text = await page.evaluate(() => document.body.innerText);
    await page.screenshot({ path: shot });
    // the sandwich view lists every function in a DOM table
    await page.keyboard.press("3");
    await page.waitForTimeout(500);
    out.sandwichText = await page.evaluate(() => document.body.innerText);
    await page.screenshot({ path: shot.replace(/\.png$/, "-sandwich.png") });
  });
}

(async () => {
  const [mode, target, shot, a, b, c] = process.argv.slice(2);
  const out = mode === "flame" ? await flame(target, shot, a, b, c)
    : mode === "svg" ? await svg(target, shot, a, b)
    : mode === "speedscope" ? await speedscope(target, shot)
    : null;
  if (!out) throw new Error("usage: browser_check.js flame|svg|speedscope TARGET SHOT [...]");
  process.stdout.write(JSON.stringify(out) + "\n");
})().catch((e) => { console.error(String(e && e.stack || e)); process.exit(1); });
