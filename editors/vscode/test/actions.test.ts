import { test } from "node:test";
import assert from "node:assert/strict";
import { effectiveRange, findAction, needsInstruction } from "../src/actions";

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

test("the instruction-less edit command asks for an instruction, others pass through", () => {
  assert.equal(needsInstruction("difill.editSelection", [{ uri: "u", range: r(0, 0, 0, 1), version: 1 }]), true);
  assert.equal(needsInstruction("difill.editSelection", [{ uri: "u", instruction: "  " }]), true);
  assert.equal(needsInstruction("difill.editSelection", [{ uri: "u", instruction: "add types" }]), false);
  assert.equal(needsInstruction("difill.fillHoles", [{ uri: "u" }]), false);
});
