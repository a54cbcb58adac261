// Drives the kimi-rs web page in headless Chromium through Playwright (playwright-core):
// opens the page, checks the prefilled working directory, creates a session, sends a prompt,
// approves the Write call from its diff card, and checks the rendered answer: Markdown turned
// into elements, injected HTML shown as text and never run, only http(s) links. Run by
// crates/cli/tests/web_browser.rs with the URL (token in the fragment) and the expected
// working directory; prints one line per check and exits non-zero at the first failure.
"use strict";
const { chromium } = require("playwright-core");

const [url, cwd] = process.argv.slice(2);
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
  try {
    const page = await browser.newPage();
    page.setDefaultTimeout(WAIT);
    page.on("pageerror", (e) => problems.push("page error: " + e.message));
    page.on("console", (m) => {
      if (m.type() === "error") problems.push("console error: " + m.text());
    });
    page.on("dialog", (d) => { problems.push("a dialog opened: " + d.message()); d.dismiss(); });

    await page.goto(url);
    check(!(await page.evaluate(() => location.hash.includes("token"))), "the token is removed from the address bar");
    await page.waitForFunction((want) => document.getElementById("cwd").value === want, cwd);
    check(true, "the working directory is prefilled with the server's");
    await page.waitForSelector("#conn.on");
    check(true, "the WebSocket is connected");
    check(!(await page.isVisible("#login")), "the token form stays hidden when the URL carried the token");

    await page.click("#new");
    await page.waitForSelector("#prompt:not([disabled])");
    await page.fill("#prompt", "write the notes");
    await page.press("#prompt", "Enter");
    await page.waitForSelector(".msg.user");
    check((await page.textContent(".msg.user")) === "write the notes", "the prompt is shown as the user's message");

    const approve = '.tool[data-tool="Write"] .ask.approval button[data-decision="approved"]';
    await page.waitForSelector(approve);
    const badge = await page.textContent('.tool[data-tool="Write"] .badge');
    check(badge === "awaiting approval", "the Write card awaits approval", badge);
    const added = await page.$$eval('.tool[data-tool="Write"] pre.diff .line.add', (ls) => ls.map((l) => l.textContent));
    check(JSON.stringify(added) === JSON.stringify(["+# Notes", "+hello from kimi"]), "the Write card shows the new content as added lines", added);
    await page.click(approve);
    await page.waitForSelector('.tool[data-tool="Write"] .ask .outcome');
    check((await page.textContent('.tool[data-tool="Write"] .ask .outcome')).includes("Approved"), "the approval shows its outcome");

    await page.waitForFunction(() => {
      const m = document.querySelectorAll(".msg.assistant");
      return m.length && m[m.length - 1].textContent.includes("All done");
    });
    await page.waitForFunction(() => document.querySelector('.tool[data-tool="Write"] .badge').textContent === "done");
    check(true, "the Write card ends done");
    const answer = await page.evaluate(() => {
      const all = document.querySelectorAll(".msg.assistant");
      const box = all[all.length - 1];
      return {
        text: box.textContent,
        strong: [...box.querySelectorAll("strong")].map((e) => e.textContent),
        em: [...box.querySelectorAll("em")].map((e) => e.textContent),
        code: [...box.querySelectorAll(":not(pre) > code")].map((e) => e.textContent),
        pre: [...box.querySelectorAll("pre code")].map((e) => e.textContent),
        items: [...box.querySelectorAll("ul > li")].map((e) => e.textContent),
        heading: [...box.querySelectorAll("h2")].map((e) => e.textContent),
        links: [...box.querySelectorAll("a")].map((e) => e.getAttribute("href")),
        imgs: document.querySelectorAll("#log img").length,
        scripts: document.querySelectorAll("#log script").length,
        pwned: window.__pwned,
      };
    });
    check(!answer.text.includes("**"), "Markdown source is not shown", answer.text);
    check(answer.heading[0] === "Summary", "a heading is rendered", answer.heading);
    check(answer.strong[0] === "bold" && answer.em[0] === "italic", "bold and italic are rendered", answer);
    check(answer.code.includes("notes.md"), "inline code is rendered", answer.code);
    check(answer.pre.length === 1 && answer.pre[0] === 'fn main() {\n    println!("<b>hi</b>");\n}', "a fenced code block is rendered verbatim", answer.pre);
    check(answer.items.length === 2 && answer.items[1] === "second item", "a list is rendered", answer.items);
    check(answer.text.includes('<img src=x onerror="window.__pwned=1">'), "an injected <img onerror> is shown as text");
    check(answer.text.includes("<script>window.__pwned=2</script>"), "an injected <script> is shown as text");
    check(answer.imgs === 0 && answer.scripts === 0 && answer.pwned === undefined, "no injected element exists or ran", answer);
    check(JSON.stringify(answer.links) === JSON.stringify(["https://example.com/docs"]), "only the http(s) link is a link", answer.links);

    await page.waitForSelector("#todo-box:not([hidden]) #todos li");
    const todos = await page.$$eval("#todos li", (ls) => ls.map((l) => [l.className, l.textContent]));
    check(todos.length === 2 && todos[0][0] === "done" && todos[1][0] === "in_progress", "the todo list is shown", todos);
    const chips = await page.$eval("#chips", (c) => ({ plan: c.dataset.plan, text: c.textContent }));
    check(chips.plan === "false" && chips.text.includes("permission: manual"), "the session's modes are shown", chips);

    const base = cwd.split("/").pop();
    await page.fill("#search", "no-such-session-anywhere");
    await page.waitForFunction(() => document.querySelectorAll("#sessions .session").length === 0);
    await page.fill("#search", base);
    await page.waitForFunction(() => document.querySelectorAll("#sessions .session").length === 1);
    check(true, "searching sessions filters the list");
    check((await page.textContent("#session-title")) === "write the notes", "the session's title is shown");

    // For a look at the page: KIMI_RS_BROWSER_SCREENSHOT=/some/dir keeps light and dark shots.
    const shots = process.env.KIMI_RS_BROWSER_SCREENSHOT;
    if (shots) {
      await page.fill("#search", "");
      await page.setViewportSize({ width: 1280, height: 900 });
      await page.screenshot({ path: shots + "/light.png" });
      await page.emulateMedia({ colorScheme: "dark" });
      await page.screenshot({ path: shots + "/dark.png" });
      await page.emulateMedia({ colorScheme: "light" });
    }

    // A reload shows the same conversation from the history.
    await page.reload();
    await page.waitForSelector("#sessions .session");
    await page.click("#sessions .session");
    await page.waitForFunction(() => [...document.querySelectorAll(".msg.assistant strong")].some((e) => e.textContent === "bold"));
    check((await page.$$('.tool[data-tool="Write"] pre.diff')).length === 1, "a reloaded session shows its tool card and answer");
    check(problems.length === 0, "no page errors, console errors or dialogs", problems);
  } finally {
    await browser.close();
  }
})().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
