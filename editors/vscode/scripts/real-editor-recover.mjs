// Step 7 of real-editor-test.mjs (issue 66, "Clients that recover"): kill -9 the difill server
// while recover.py is open in the editor; the status item says `restarting` (never a dead
// `stopped` or `error`), and ghost text comes back in the same editor with no key pressed.
// Times are logged (editors/README.md records them), not asserted: the model's load is in them.
import { execFileSync } from "node:child_process";
import { join } from "node:path";

const GHOST = ".ghost-text-decoration, .ghost-text";

/** The pids of `difill serve` processes under code-server (pid `root`): the extension host
 *  spawns it as `<python> -m difill serve` (or `difill serve`). */
export function serverPids(root) {
  const rows = execFileSync("ps", ["-eo", "pid=,ppid=,args="], { encoding: "utf8" })
    .trim()
    .split("\n")
    .map((l) => l.trim().match(/^(\d+)\s+(\d+)\s+(.*)$/))
    .filter(Boolean)
    .map(([, pid, ppid, args]) => ({ pid: Number(pid), ppid: Number(ppid), args }));
  const parent = new Map(rows.map((r) => [r.pid, r.ppid]));
  const under = (pid) => {
    for (let p = parent.get(pid); p; p = parent.get(p)) if (p === root) return true;
    return false;
  };
  return rows.filter((r) => /(^|\s|\/)difill serve(\s|$)/.test(r.args) && under(r.pid)).map((r) => r.pid);
}

/** The output channel's last "model loaded from ... in N s" (its lines start with a timestamp). */
function lastModelLoad() {
  try {
    const lines = execFileSync("grep", ["-rh", "difill: model loaded from", process.env.DIFILL_LOG_DIR], { encoding: "utf8" });
    const last = lines.trim().split("\n").sort().at(-1) ?? "";
    return last.slice(last.indexOf("model loaded from"));
  } catch {
    return "model load time is not in the output channel";
  }
}

/** The difill status item's text ("" when none). */
const statusText = (page) =>
  page.evaluate(() => [...document.querySelectorAll(".statusbar-item")].map((e) => (e.textContent ?? "").trim()).find((x) => /^difill( |$)/.test(x)) ?? "");

/** What is on screen: the status item, whether ghost text shows, the lines without it. */
const screen = (page) =>
  page.evaluate((ghost) => {
    const status = [...document.querySelectorAll(".statusbar-item")].map((e) => (e.textContent ?? "").trim()).find((x) => /^difill( |$)/.test(x)) ?? "";
    const lines = [...document.querySelectorAll(".monaco-editor .view-lines .view-line")]
      .map((e) => {
        const line = e.cloneNode(true);
        line.querySelectorAll("[class*='ghost-text']").forEach((g) => g.remove());
        return [parseFloat(e.style.top), (line.textContent ?? "").replace(/\u00a0/g, " ")];
      })
      .sort((a, b) => a[0] - b[0])
      .map((x) => x[1]);
    const shown = [...document.querySelectorAll(ghost)].map((e) => e.textContent).join("");
    const cursor = (document.body.innerText.match(/Ln (\d+), Col (\d+)/) ?? []).slice(1).join(":");
    return { status, ghost: shown, lines, cursor };
  }, GHOST);

/** Ghost text at the cursor, asked for with "Trigger Inline Suggestion" if typing shows none. */
async function ghostShown(page, tries = 4) {
  for (let attempt = 0; attempt < tries; attempt++) {
    try {
      await page.waitForSelector(GHOST, { timeout: 20_000 });
      return;
    } catch {
      await page.keyboard.press("F1");
      await page.keyboard.type("Trigger Inline Suggestion");
      await page.waitForSelector(".quick-input-list .monaco-list-row:has-text('Trigger Inline Suggestion')", { timeout: 10_000 });
      await page.waitForTimeout(300);
      await page.keyboard.press("Enter");
    }
  }
  throw new Error("no ghost text in recover.py before the kill");
}

/** Polls the screen after the kill until ghost text is back; the first time each status showed. */
async function watchRecovery(page, killedAt, timeoutMs) {
  const firstSeen = new Map(); // status text without its latency -> ms after the kill
  for (;;) {
    const now = await screen(page);
    const ms = Date.now() - killedAt;
    const state = now.status.replace(/ \d+ ms$/, "") || "(none)";
    if (!firstSeen.has(state)) firstSeen.set(state, ms);
    if (now.ghost) return { ms, now, firstSeen };
    if (ms > timeoutMs) {
      const seen = [...firstSeen].map(([s, t]) => `"${s}" at ${t} ms`).join(", ");
      throw new Error(`no ghost text ${timeoutMs / 1000} s after kill -9 of the server, no key pressed (statuses: ${seen})`);
    }
    await page.waitForTimeout(50);
  }
}

export async function killAndRecover(page, { shots, log, codeServerPid }) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+P");
  await page.waitForSelector(".quick-input-widget:not([style*='display: none']) input", { timeout: 30_000 });
  await page.keyboard.type("recover.py");
  await page.waitForSelector(".quick-input-list .monaco-list-row:has-text('recover.py')", { timeout: 30_000 });
  await page.waitForTimeout(300);
  await page.keyboard.press("Enter");
  for (const end = Date.now() + 30_000; !(await screen(page)).lines[0]?.startsWith("def total("); await page.waitForTimeout(100)) {
    if (Date.now() > end) throw new Error("recover.py did not open");
  }
  // Typed, not saved: the new server must get the editor's text, not the file's.
  await page.keyboard.press("Control+End");
  await page.keyboard.type("    return ", { delay: 40 });
  await ghostShown(page);
  log(`recover.py: ghost text shown before the kill (status "${await statusText(page)}")`);
  // Hidden, so that only a new answer can show it again.
  await page.keyboard.press("Escape");
  await page.waitForSelector(GHOST, { state: "detached", timeout: 10_000 });
  const before = await screen(page);

  const pids = serverPids(codeServerPid);
  if (pids.length !== 1) throw new Error(`expected one difill serve under code-server (pid ${codeServerPid}), found ${JSON.stringify(pids)}`);
  process.kill(pids[0], "SIGKILL");
  const killedAt = Date.now();
  log(`kill -9 ${pids[0]} (difill serve) with recover.py open; no key pressed from now on`);

  const { ms, now, firstSeen } = await watchRecovery(page, killedAt, 180_000);
  await page.screenshot({ path: join(shots, "vscode-recovered.png") });
  const restarting = [...firstSeen].find(([s]) => /^difill restarting/.test(s));
  if (!restarting) throw new Error(`the status item never said "difill restarting" (statuses: ${[...firstSeen.keys()].join(", ")})`);
  log(`recovery: the status item said "${restarting[0]}" ${restarting[1]} ms after the kill`);
  // It keeps saying so until the new server reports (loading, then ready): never a dead
  // "stopped" or "error", nor the client's own "starting" as if nothing had happened.
  const dead = [...firstSeen.keys()].find((s) => /^difill (starting|stopped|error)/.test(s) || s === "(none)");
  if (dead) throw new Error(`the status item said "${dead}" during the recovery (statuses: ${[...firstSeen.keys()].join(", ")})`);
  if (/starting|loading|restarting|stopped|error/.test(now.status)) throw new Error(`ghost text came while the status said "${now.status}"`);
  if (JSON.stringify(now.lines) !== JSON.stringify(before.lines) || now.cursor !== before.cursor) {
    throw new Error(`the editor changed: ${JSON.stringify(before.lines.slice(0, 3))} at ${before.cursor} -> ${JSON.stringify(now.lines.slice(0, 3))} at ${now.cursor}`);
  }
  const after = serverPids(codeServerPid);
  if (after.length !== 1 || after[0] === pids[0]) throw new Error(`no new difill serve: ${JSON.stringify(after)}`);
  const timeline = [...firstSeen].map(([s, t]) => `"${s}" ${t} ms`).join(", ");
  log(`recovery: ghost text back in the same editor ${ms} ms after kill -9, no key pressed (new server ${after[0]}; status ${timeline})`);
  log(`recovery: the new server's ${lastModelLoad()}`);
  // Settled: still ready a moment later, not a restart loop or a dead state.
  await page.waitForTimeout(2000);
  const settled = await statusText(page);
  if (/restarting|stopped|error/.test(settled)) throw new Error(`the status item says "${settled}" 2 s after the recovery`);
  log(`recovery: the status item says "${settled}"`);
}
