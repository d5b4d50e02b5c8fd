import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  applicable,
  asProposal,
  Debouncer,
  InlineEdit,
  inlineEditsOf,
  marker,
  nextEditEnabled,
  tabAction,
  Timers,
} from "../src/nextEditView";
import { applyEdits, diffView } from "../src/proposalView";

const r = (l1: number, c1: number, l2: number, c2: number) => ({
  start: { line: l1, character: c1 },
  end: { line: l2, character: c2 },
});
// After renaming `width` to `w` in the signature: the server offers the other uses.
const TEXT = "def area(w, height):\n    half = width / 2\n    return width * height + half\n";
const URI = "file:///tmp/area.py";
const edit = (line: number, version = 2): InlineEdit => ({
  text: "w",
  range: r(line, 11, line, 16),
  textDocument: { uri: URI, version },
});

test("the server's answer is read as its edits, best first; malformed ones are left out", () => {
  const answer = {
    edits: [
      edit(1),
      { text: "w", range: r(2, 11, 2, 16) }, // no textDocument
      { text: 3, range: r(2, 11, 2, 16), textDocument: { uri: URI, version: 2 } },
      { ...edit(2), textDocument: { uri: URI, version: "2" } },
      edit(2),
    ],
  };
  assert.deepEqual(inlineEditsOf(answer), [edit(1), edit(2)]);
  assert.deepEqual(inlineEditsOf({ edits: [] }), []);
  assert.deepEqual(inlineEditsOf(null), []);
  assert.deepEqual(inlineEditsOf({ items: [edit(1)] }), []);
});

test("nextEdit off turns it off; on (model edits) and drafts both ask", () => {
  assert.equal(nextEditEnabled("off"), false);
  assert.equal(nextEditEnabled("drafts"), true);
  assert.equal(nextEditEnabled("on"), true);
  assert.equal(nextEditEnabled(undefined), true); // the server's default, drafts
});

test("an edit applies only to the document and version it was made for", () => {
  assert.equal(applicable(edit(1, 2), URI, 2), true);
  assert.equal(applicable(edit(1, 2), URI, 3), false);
  assert.equal(applicable(edit(1, 2), "file:///tmp/other.py", 2), false);
});

test("the next edit is drawn as the proposals' diff: the old name struck, the new one after it", () => {
  const lengths = TEXT.split("\n").map((l) => l.length);
  const view = diffView(asProposal(edit(1)), (n) => lengths[n] ?? 0);
  assert.deepEqual(view.removed, [r(1, 11, 1, 16)]);
  assert.deepEqual(view.added, [{ line: 1, character: 16, text: "w" }]);
  // What accepting it does to the text: exactly the rename at that place.
  assert.equal(applyEdits(TEXT, asProposal(edit(1)).edits), TEXT.replace("half = width", "half = w"));
});

test("Tab jumps to an edit on another line, and accepts it once the cursor is on its line", () => {
  assert.equal(tabAction(edit(2), { line: 0, character: 10 }), "jump");
  assert.equal(tabAction(edit(2), { line: 2, character: 11 }), "accept");
  assert.equal(tabAction(edit(2), { line: 2, character: 0 }), "accept");
  const twoLines = { ...edit(1), range: r(1, 4, 2, 3) };
  assert.equal(tabAction(twoLines, { line: 2, character: 9 }), "accept");
  assert.equal(tabAction(twoLines, { line: 3, character: 0 }), "jump");
});

test("the gutter marker sits on the edit when it is on screen, else on the cursor's line pointing to it", () => {
  const far = { ...edit(1), range: r(80, 4, 80, 9) };
  const onScreen = marker(far, [{ start: 70, end: 95 }], 72);
  assert.equal(onScreen.line, 80);
  assert.match(onScreen.hint, /\(Tab jumps, Tab again accepts, Esc dismisses\)/); // the hint says what Tab does next
  assert.match(marker(far, [{ start: 70, end: 95 }], 80).hint, /\(Tab accepts, Esc dismisses\)/);
  const below = marker(far, [{ start: 0, end: 30 }], 12);
  assert.equal(below.line, 12);
  assert.match(below.hint, /line 81, below \(Tab jumps to it/);
  const above = marker(far, [{ start: 100, end: 130 }], 110);
  assert.equal(above.line, 110);
  assert.match(above.hint, /line 81, above/);
});

/** Timers driven by hand: `tick(ms)` runs what is due. */
function fakeTimers(): Timers & { tick(ms: number): void } {
  let now = 0;
  let next = 0;
  const due = new Map<number, { at: number; run: () => void }>();
  return {
    set(run, ms) {
      due.set(++next, { at: now + ms, run });
      return next;
    },
    clear(handle) {
      due.delete(handle as number);
    },
    tick(ms) {
      now += ms;
      for (const [id, t] of [...due]) {
        if (t.at <= now) {
          due.delete(id);
          t.run();
        }
      }
    },
  };
}

/** A request the test answers by hand. */
function requests() {
  const sent: { resolve: (v: string) => void; reject: (e: Error) => void; cancelled: boolean }[] = [];
  const ask = () => {
    let resolve!: (v: string) => void;
    let reject!: (e: Error) => void;
    const answer = new Promise<string>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const req = { resolve, reject, cancelled: false };
    sent.push(req);
    return {
      answer,
      cancel: () => {
        req.cancelled = true;
        reject(new Error("cancelled"));
      },
    };
  };
  return { sent, ask };
}

const settle = () => new Promise((res) => setImmediate(res));

test("it asks once the typing pauses, not on every keystroke", async () => {
  const timers = fakeTimers();
  const { sent, ask } = requests();
  const shown: string[] = [];
  const d = new Debouncer(ask, (a: string) => shown.push(a), 250, timers);
  d.edited();
  timers.tick(100);
  d.edited(); // another key within the pause: the wait starts over
  timers.tick(200);
  assert.equal(sent.length, 0);
  timers.tick(50);
  assert.equal(sent.length, 1);
  sent[0].resolve("edit");
  await settle();
  assert.deepEqual(shown, ["edit"]);
  assert.equal(d.waiting, false);
});

test("typing again cancels the request in flight, and its late answer is never shown", async () => {
  const timers = fakeTimers();
  const { sent, ask } = requests();
  const shown: string[] = [];
  const d = new Debouncer(ask, (a: string) => shown.push(a), 250, timers);
  d.edited();
  timers.tick(250);
  assert.equal(sent.length, 1);
  d.edited(); // the user typed while the server was answering
  assert.equal(sent[0].cancelled, true);
  sent[0].resolve("stale"); // an answer that was already on its way
  timers.tick(250);
  assert.equal(sent.length, 2);
  sent[1].resolve("fresh");
  await settle();
  assert.deepEqual(shown, ["fresh"]);
});

test("dismissing (Esc) stops the wait and the request; nothing is shown after it", async () => {
  const timers = fakeTimers();
  const { sent, ask } = requests();
  const shown: string[] = [];
  const d = new Debouncer(ask, (a: string) => shown.push(a), 250, timers);
  d.edited();
  d.cancel();
  timers.tick(1000);
  assert.equal(sent.length, 0);
  d.edited();
  timers.tick(250);
  d.cancel();
  assert.equal(sent[0].cancelled, true);
  await settle();
  assert.deepEqual(shown, []);
});

test("when there is nothing to ask (the feature off, no server), no request is made", () => {
  const timers = fakeTimers();
  let asked = 0;
  const d = new Debouncer(() => {
    asked += 1;
    return undefined;
  }, () => assert.fail("nothing to show"), 250, timers);
  d.edited();
  timers.tick(250);
  assert.equal(asked, 1);
  assert.equal(d.waiting, false);
});

test("Tab and Esc act on the next edit only where ghost text, the suggest widget and proposals do not", () => {
  const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "package.json"), "utf8"));
  const bindings: { command: string; key: string; when: string }[] = manifest.contributes.keybindings;
  const tab = bindings.find((b) => b.command === "difill.nextEditTab");
  const esc = bindings.find((b) => b.command === "difill.dismissNextEdit");
  assert.equal(tab?.key, "tab");
  assert.equal(esc?.key, "escape");
  for (const when of [tab!.when, esc!.when]) {
    for (const need of ["difill.nextEditShown", "!inlineSuggestionVisible", "!suggestWidgetVisible", "!difill.proposalPending"]) {
      assert.ok(when.includes(need), `${when} lacks ${need}`);
    }
  }
  // The gutter icon ships in the .vsix.
  assert.ok(readFileSync(join(__dirname, "..", "..", ".vscodeignore"), "utf8").includes("!media/next-edit.svg"));
  readFileSync(join(__dirname, "..", "..", "media", "next-edit.svg"));
});
