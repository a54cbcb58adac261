// Drives the `kimi-rs vis` page in headless Chromium through Playwright (playwright-core):
// loads it, waits for it to render, and checks the figures, the timeline's bars (a turn per
// turn, a tool bar per call with its duration), the context chart and the tool table against
// the numbers the test passes. Run by crates/cli/tests/vis_browser.rs with the URL, the
// expected turn and tool-call counts and the slowest tool's name; prints one line per check
// and exits non-zero at the first failure.
"use strict";
const { chromium } = require("playwright-core");

const [url, turns, calls, slowest] = process.argv.slice(2);
const executablePath = process.env.KIMI_RS_CHROMIUM || "/usr/bin/chromium";
const WAIT = 20000;

function check(cond, what, detail) {
  if (!cond) throw new Error("check failed: " + what + (detail === undefined ? "" : ": " + JSON.stringify(detail)));
  console.log("ok: " + what);
}

(async () => {
  const browser = await chromium.launch({
    executablePath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const problems = [];
  const requests = [];
  try {
    const page = await browser.newPage();
    page.setDefaultTimeout(WAIT);
    page.on("pageerror", (e) => problems.push("page error: " + e.message));
    page.on("console", (m) => { if (m.type() === "error") problems.push("console error: " + m.text()); });
    page.on("request", (r) => requests.push(r.url()));
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(url);
    await page.waitForFunction(() => document.body.dataset.rendered === "1");
    check(true, "the page rendered");
    check((await page.textContent("#card-turns b")) === turns, "the turn count is shown", await page.textContent("#card-turns b"));
    check((await page.textContent("#card-tools b")).startsWith(calls), "the tool-call count is shown");
    const bars = await page.$$eval("#timeline-svg rect.turn", (r) => r.length);
    check(String(bars) === turns, "one timeline bar per turn", bars);
    const tools = await page.$$eval("#timeline-svg rect.tool", (rs) => rs.map((r) => ({
      name: r.dataset.tool, ms: Number(r.dataset.duration), width: r.getBBox().width,
      tip: r.querySelector("title").textContent })));
    check(String(tools.length) === calls, "one timeline bar per tool call", tools);
    const slow = tools.reduce((a, b) => (b.ms > a.ms ? b : a));
    check(slow.name === slowest && slow.width > 2, "the slowest call is the widest bar", tools);
    check(tools.every((t) => t.tip.startsWith(t.name)), "each bar's tooltip names its tool and duration", tools);
    const steps = await page.$$eval("#timeline-svg rect.step", (r) => r.length);
    check(steps > 0, "model steps are drawn", steps);
    const points = await page.$$eval("#context-svg circle.point", (c) => c.length);
    check(points === steps, "the context chart has a point per step", points);
    const firstTool = await page.textContent("#tools tr:nth-child(2) td");
    check(firstTool === slowest, "the tool table starts with the tool that took longest", firstTool);
    const origin = new URL(url).origin;
    check(requests.every((r) => r.startsWith(origin)), "nothing is loaded from elsewhere", requests);
    const shots = process.env.KIMI_RS_BROWSER_SCREENSHOT;
    if (shots) await page.screenshot({ path: shots + "/vis.png", fullPage: true });
    check(problems.length === 0, "no page errors", problems);
  } finally {
    await browser.close();
  }
})().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
