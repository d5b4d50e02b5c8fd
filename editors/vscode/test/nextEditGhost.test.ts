// Issue 63: next edits and ghost text never compete. No next-edit ask while a word may still be
// typed (until a pause, the word left, or Esc) or while ghost text is shown; the hint names the
// key that acts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  atWordEnd,
  AUTOMATIC,
  DEBOUNCE_MS,
  Debouncer,
  endOfTyped,
  FINISHED_PAUSE_MS,
  GhostText,
  InlineEdit,
  INVOKED,
  marker,
  Timers,
  waitAfterEdit,
} from "../src/nextEditView";

function fakeTimers(): Timers & { tick(ms: number): void } {
  let now = 0;
  let next = 0;
  const due = new Map<number, { at: number; run: () => void }>();
  return {
    set(run, ms) {
      due.set(++next, { at: now + ms, run });
      return next;
    },
    clear: (handle) => void due.delete(handle as number),
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

/** Requests the test sees (with their trigger kind) and never answers. */
function requests() {
  const triggers: number[] = [];
  const ask = (trigger: number) => {
    triggers.push(trigger);
    return { answer: new Promise<string>(() => {}), cancel: () => {} };
  };
  return { triggers, ask };
}

// `requirement` double-clicked on `    requirement = parse(...)` and `req` typed over it.
const LINE = "    req = parse(dep_chain[-1])";

test("a word at the cursor may still be typed: the ask waits for the pause; after a symbol, or an applied edit, the debounce", () => {
  assert.equal(atWordEnd(LINE, 7), true); // `req|`
  assert.equal(atWordEnd(LINE, 5), true); // `r|`
  assert.equal(atWordEnd(LINE, 8), false); // `req |`
  assert.equal(atWordEnd(LINE, 16), false); // `parse(|`
  assert.equal(atWordEnd("    zähler", 10), true);
  assert.equal(waitAfterEdit(LINE, { line: 1, character: 7 }, false), FINISHED_PAUSE_MS);
  assert.equal(waitAfterEdit(LINE, { line: 1, character: 16 }, false), DEBOUNCE_MS);
  assert.equal(waitAfterEdit(LINE, { line: 1, character: 7 }, true), DEBOUNCE_MS); // Tab applied it
  assert.ok(FINISHED_PAUSE_MS > 750); // over the server's PAUSE_S: the ask after the pause is answered
  assert.deepEqual(endOfTyped({ line: 1, character: 4 }, "r"), { line: 1, character: 5 });
  assert.deepEqual(endOfTyped({ line: 1, character: 4 }, "a\n  bc"), { line: 2, character: 4 });
});

test("mid-word: nothing is asked at the debounce; leaving the word asks at once, the pause asks later", () => {
  const timers = fakeTimers();
  const { triggers, ask } = requests();
  const d = new Debouncer(ask, () => {}, DEBOUNCE_MS, timers);
  d.edited(FINISHED_PAUSE_MS); // `r`
  timers.tick(200);
  d.edited(FINISHED_PAUSE_MS); // `re`
  timers.tick(DEBOUNCE_MS);
  assert.deepEqual(triggers, []); // the old debounce would have asked here
  d.finished(AUTOMATIC); // the cursor left the word
  assert.deepEqual(triggers, [AUTOMATIC]);
  d.edited(FINISHED_PAUSE_MS);
  timers.tick(FINISHED_PAUSE_MS);
  assert.deepEqual(triggers, [AUTOMATIC, AUTOMATIC]); // a pause finishes it too
  d.finished(INVOKED); // Esc with nothing waiting asks nothing
  assert.deepEqual(triggers, [AUTOMATIC, AUTOMATIC]);
});

test("while ghost text is shown nothing is asked; Esc hides it and asks, as asked for", () => {
  const timers = fakeTimers();
  const { triggers, ask } = requests();
  const ghost = new GhostText();
  const at = { uri: "file:///u.py", version: 4, line: 1, character: 7 };
  const d = new Debouncer(ask, () => {}, DEBOUNCE_MS, timers, () => ghost.shownAt(at));
  ghost.answered(at, 1); // `uire` after `req`
  d.edited(FINISHED_PAUSE_MS);
  timers.tick(5 * FINISHED_PAUSE_MS);
  assert.deepEqual(triggers, []); // the pause came, but the ghost text is on screen
  assert.equal(d.waiting, true);
  d.finished(AUTOMATIC); // a move that keeps it shown (the server's own check): still nothing
  assert.deepEqual(triggers, []);
  ghost.hidden(); // Esc
  d.finished(INVOKED);
  assert.deepEqual(triggers, [INVOKED]);
});

test("ghost text counts as shown only for the version and cursor it was answered at", () => {
  const ghost = new GhostText();
  const at = { uri: "file:///u.py", version: 4, line: 1, character: 7 };
  assert.equal(ghost.shownAt(at), false);
  ghost.answered(at, 2);
  assert.equal(ghost.shownAt(at), true);
  assert.equal(ghost.shownAt({ ...at, version: 5 }), false); // a keystroke, or Tab took it
  assert.equal(ghost.shownAt({ ...at, character: 6 }), false); // the cursor moved: VS Code hid it
  ghost.answered(at, 0); // answered nothing: nothing shown
  assert.equal(ghost.shownAt(at), false);
});

test("with ghost text shown, the hint names Tab for the ghost text and never says Tab jumps", () => {
  const edit: InlineEdit = {
    text: "req",
    range: { start: { line: 2, character: 11 }, end: { line: 2, character: 22 } },
    textDocument: { uri: "file:///u.py", version: 4 },
  };
  const shown = marker(edit, [{ start: 0, end: 40 }], 1, true);
  assert.match(shown.hint, /Tab takes the ghost text/);
  assert.doesNotMatch(shown.hint, /Tab jumps|Tab accepts/);
  assert.match(marker(edit, [{ start: 0, end: 40 }], 1, false).hint, /Tab jumps/);
});

test("Esc finishes the word or hides the ghost text; Tab never jumps while ghost text is shown", () => {
  const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "package.json"), "utf8"));
  const bindings: { command: string; key: string; when: string }[] = manifest.contributes.keybindings;
  const finish = bindings.find((b) => b.command === "difill.finishEdit");
  assert.equal(finish?.key, "escape");
  for (const need of ["inlineSuggestionVisible || difill.wordPending", "!suggestWidgetVisible", "!difill.proposalPending"]) {
    assert.ok(finish!.when.includes(need), `${finish!.when} lacks ${need}`);
  }
  const tab = bindings.find((b) => b.command === "difill.nextEditTab");
  assert.ok(tab!.when.includes("!inlineSuggestionVisible"));
});
