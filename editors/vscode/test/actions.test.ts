import { test } from "node:test";
import assert from "node:assert/strict";
import { asksInstruction, effectiveRange, findAction } from "../src/actions";

const lengths = [10, 20, 30];
const len = (n: number) => lengths[n];
const r = (l1: number, c1: number, l2: number, c2: number) => ({
  start: { line: l1, character: c1 },
  end: { line: l2, character: c2 },
});

test("an empty selection edits the cursor's whole line", () => {
  assert.deepEqual(effectiveRange(r(1, 5, 1, 5), len), r(1, 0, 1, 20));
});

test("whole lines selected down to the next line's start do not include its newline", () => {
  assert.deepEqual(effectiveRange(r(0, 0, 2, 0), len), r(0, 0, 1, 20));
});

test("an ordinary selection is kept as it is", () => {
  assert.deepEqual(effectiveRange(r(0, 3, 1, 4), len), r(0, 3, 1, 4));
});

test("the rewrite action is found by title and refactor.rewrite kind", () => {
  const actions = [
    { title: "Fill holes in selection", kind: "refactor.rewrite" },
    { title: "Rewrite selection", kind: "refactor.rewrite" },
    { title: "Rewrite imports", kind: "source.organizeImports" },
  ];
  assert.equal(findAction(actions, "Rewrite")?.title, "Rewrite selection");
  assert.equal(findAction(actions, "Complete block"), undefined);
  assert.equal(findAction(null, "Rewrite"), undefined);
});

test("only the instruction action asks for an instruction; Rewrite selection runs as it is", () => {
  const sel = { uri: "u", range: r(0, 0, 0, 1), version: 1 };
  const action = (title: string, command: string, arg: object = sel) => ({ title, command: { command, arguments: [arg] } });
  assert.equal(asksInstruction(action("Edit selection with instruction...", "difill.editSelection")), true);
  assert.equal(asksInstruction(action("Edit selection with instruction...", "difill.editSelection", { ...sel, instruction: "  " })), true);
  assert.equal(asksInstruction(action("Edit selection with instruction...", "difill.editSelection", { ...sel, instruction: "add types" })), false);
  // Same command, same argument, no instruction: the plain rewrite.
  assert.equal(asksInstruction(action("Rewrite selection", "difill.editSelection")), false);
  assert.equal(asksInstruction(action("Fill holes in selection", "difill.fillHoles")), false);
  assert.equal(asksInstruction({ title: "Edit selection with instruction..." }), false);
});

test("the cursor's actions (no selection): Edit this function asks for an instruction, Rewrite this function runs", () => {
  const args = [{ uri: "file:///a.py", range: r(0, 0, 2, 31), version: 3 }];
  assert.equal(
    asksInstruction({ title: "Edit this function with instruction...", command: { command: "difill.editSelection", arguments: args } }),
    true,
  );
  assert.equal(asksInstruction({ title: "Rewrite this function", command: { command: "difill.editSelection", arguments: args } }), false);
  assert.equal(findAction([{ title: "Rewrite this function", kind: "refactor.rewrite" }], "Rewrite")?.title, "Rewrite this function");
});
