// Drives code-server in Chromium (playwright-core) like a user; see real-editor-test.sh.
// Usage: node real-editor-test.mjs URL SHOTS_DIR   (env DIFILL_NODE_MODULES: where playwright-core is)
import { createRequire } from "node:module";
import { join } from "node:path";

const require = createRequire(join(process.env.DIFILL_NODE_MODULES, "noop.js"));
const { chromium } = require("playwright-core");
const [url, shots] = process.argv.slice(2);
const t0 = Date.now();
const log = (msg) => console.log(`  +${((Date.now() - t0) / 1000).toFixed(1)}s ${msg}`);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu"],
});
let failed = false;
const page = await browser.newPage({ viewport: { width: 1180, height: 620 } });
try {
  await page.goto(url);
  await page.waitForSelector(".monaco-workbench", { timeout: 120_000 });
  log("workbench loaded");

  // Open the file with Quick Open, like a user.
  await page.waitForTimeout(3000);
  await page.keyboard.press("Control+P");
  await page.waitForSelector(".quick-input-widget:not([style*='display: none']) input", { timeout: 30_000 });
  await page.keyboard.type("stats.py");
  await page.waitForSelector(".quick-input-list .monaco-list-row:has-text('stats.py')", { timeout: 30_000 });
  await page.waitForTimeout(300);
  await page.keyboard.press("Enter");
  await page.waitForSelector(".monaco-editor .view-lines", { timeout: 30_000 });
  log("stats.py open");

  const status = () =>
    page.evaluate(() =>
      [...document.querySelectorAll(".statusbar-item")].map((e) => (e.textContent ?? "").trim()).filter((t) => t.startsWith("difill")).join(" | "),
    );
  // Ready (or already busy answering); a stopped or failed server ends the test at once.
  const state = await page.waitForFunction(
    () => {
      // Our item reads "difill", "difill 80 ms", "difill busy..."; "difill: <message>" is the
      // work-done progress of the model loading, shown by VS Code itself.
      const t = [...document.querySelectorAll(".statusbar-item")].map((e) => (e.textContent ?? "").trim()).find((x) => /^difill( |$)/.test(x));
      if (!t || /starting|loading/.test(t)) return false;
      return /stopped|error/.test(t) ? `failed: ${t}` : "ready";
    },
    null,
    { timeout: 180_000 },
  );
  if ((await state.jsonValue()) !== "ready") throw new Error(`server ${await state.jsonValue()}`);
  log(`server ready: status bar says "${await status()}"`);

  // Monaco renders spaces as U+00A0.
  const editorText = async () =>
    (await page.evaluate(() => document.querySelector(".monaco-editor .view-lines")?.textContent ?? "")).replace(/\u00a0/g, " ");

  // 1. Ghost text while typing.
  await page.click(".monaco-editor .view-lines");
  await page.keyboard.press("Control+End");
  await page.keyboard.press("Enter");
  await page.keyboard.type("    return sum((v - m", { delay: 40 });
  let ghost = null;
  for (let attempt = 0; attempt < 4 && !ghost; attempt++) {
    try {
      ghost = await page.waitForSelector(".ghost-text-decoration, .ghost-text-decoration-preview, .ghost-text", { timeout: 20_000 });
    } catch {
      // Nothing shown while typing (the ghost-text cut shows only what the model is sure of): ask
      // explicitly, as a user would with Alt+\ ("Trigger Inline Suggestion"; the key itself does
      // not reach code-server through Chromium, so the command palette runs it). Invoked
      // requests are never cut.
      await page.keyboard.press("F1");
      await page.keyboard.type("Trigger Inline Suggestion");
      await page.waitForSelector(".quick-input-list .monaco-list-row:has-text('Trigger Inline Suggestion')", { timeout: 10_000 });
      await page.waitForTimeout(300);
      await page.keyboard.press("Enter");
    }
  }
  if (!ghost) throw new Error("no ghost text appeared");
  const ghostText = await page.evaluate(() =>
    [...document.querySelectorAll(".ghost-text-decoration, .ghost-text")].map((e) => e.textContent).join(""),
  );
  log(`ghost text shown: ${JSON.stringify(ghostText)}`);
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(shots, "vscode-ghost-text.png") });

  // The ghost text is drawn inside .view-lines, so the lines' text does not change when it is
  // accepted: the cursor (the status bar's "Ln, Col") tells whether Tab inserted it.
  const cursor = () =>
    page.evaluate(() => (document.body.innerText.match(/Ln (\d+), Col (\d+)/) ?? []).slice(1).map(Number));
  const [lineBefore, colBefore] = await cursor();
  await page.keyboard.press("Tab");
  await page.waitForFunction(
    ([l, c]) => {
      const m = document.body.innerText.match(/Ln (\d+), Col (\d+)/);
      return m && (Number(m[1]) !== l || Number(m[2]) !== c);
    },
    [lineBefore, colBefore],
    { timeout: 10_000 },
  );
  const accepted = ghostText.replace(/\u00a0/g, " ");
  const [lineAfter, colAfter] = await cursor();
  // One line of ghost text: the cursor moved past exactly it (a Tab that indented moves by 4).
  if (lineAfter === lineBefore && colAfter !== colBefore + accepted.length) {
    throw new Error(`Tab did not insert the ghost text ${JSON.stringify(accepted)}: cursor ${lineBefore}:${colBefore} -> ${lineAfter}:${colAfter}`);
  }
  log("Tab accepted the suggestion");

  // 2. Edit Selection with Instruction on lines 6-8 (mean()).
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+G");
  await page.keyboard.type("6");
  await page.keyboard.press("Enter");
  await page.keyboard.press("Home");
  for (let i = 0; i < 3; i++) await page.keyboard.press("Shift+ArrowDown");
  await page.keyboard.press("F1");
  await page.keyboard.type("difill: Edit Selection with Instruction");
  await page.waitForSelector(".quick-input-list .monaco-list-row:has-text('Edit Selection with Instruction')", { timeout: 30_000 });
  await page.waitForTimeout(300);
  await page.keyboard.press("Enter");
  // Our input box (not the palette that is closing): typing earlier would go into the editor.
  await page.waitForSelector(".quick-input-widget:has-text('How should the selection change')", { timeout: 10_000 });
  await page.keyboard.type("add a docstring");
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(shots, "vscode-edit-before.png") });
  const beforeEdit = await editorText();
  if (!beforeEdit.includes("def mean(")) throw new Error("the selection changed before the edit was asked for");
  await page.keyboard.press("Enter");
  await page.waitForFunction((b) => document.querySelector(".monaco-editor .view-lines")?.textContent?.replace(/\u00a0/g, " ") !== b, beforeEdit, {
    timeout: 120_000,
  });
  log("the edit arrived (workspace/applyEdit)");
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(shots, "vscode-edit-after.png") });

  // 3. Rewrite Selection: the server's refactor.rewrite code action, resolved lazily.
  await page.keyboard.press("Control+G");
  await page.keyboard.type("3");
  await page.keyboard.press("Enter");
  await page.keyboard.press("Home");
  await page.keyboard.press("Shift+End");
  const beforeRewrite = await editorText();
  await page.keyboard.press("F1");
  await page.keyboard.type("difill: Rewrite Selection");
  await page.waitForSelector(".quick-input-list .monaco-list-row:has-text('Rewrite Selection')", { timeout: 30_000 });
  await page.waitForTimeout(300);
  await page.keyboard.press("Enter");
  await page.waitForFunction((b) => document.querySelector(".monaco-editor .view-lines")?.textContent?.replace(/\u00a0/g, " ") !== b, beforeRewrite, {
    timeout: 120_000,
  });
  log("Rewrite Selection changed the line");
  log(`status bar: "${await status()}"`);
} catch (err) {
  failed = true;
  console.error(`FAILED: ${err}`);
  await page.screenshot({ path: join(shots, "vscode-failure.png") }).catch(() => {});
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
