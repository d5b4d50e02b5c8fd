import { test } from "node:test";
import assert from "node:assert/strict";
import { applyEdits, diffView, overlays, Proposal, ProposalBook, proposalOf } from "../src/proposalView";

const r = (l1: number, c1: number, l2: number, c2: number) => ({
  start: { line: l1, character: c1 },
  end: { line: l2, character: c2 },
});
const TEXT = "def f(x):\n    y = x + 1\n    return y\n";
const lengths = TEXT.split("\n").map((l) => l.length);
const len = (n: number) => lengths[n] ?? 0;

const proposal = (id: string, range = r(1, 4, 2, 12)): Proposal => ({
  id,
  uri: "file:///f.py",
  version: 3,
  range,
  newText: "y = x * 2\n    return y",
  edits: [{ range: r(1, 10, 1, 13), newText: "* 2" }],
});

test("a canvas is laid over the lines it replaces, extra lines join the last one", () => {
  assert.deepEqual(overlays(r(1, 4, 2, 12), "a\nb\nc", len), [
    { line: 1, character: 13, text: "a" },
    { line: 2, character: 12, text: "b ⏎ c" },
  ]);
  // A shorter canvas leaves the remaining lines without text.
  assert.deepEqual(overlays(r(0, 0, 2, 12), "only", len), [{ line: 0, character: 9, text: "only" }]);
});

test("the diff strikes what each edit removes and shows its new text there", () => {
  const view = diffView(proposal("a"), len);
  assert.deepEqual(view.removed, [r(1, 10, 1, 13)]);
  assert.deepEqual(view.added, [{ line: 1, character: 13, text: "* 2" }]);
  const insertOnly = { ...proposal("b"), edits: [{ range: r(2, 4, 2, 4), newText: "await " }] };
  assert.deepEqual(diffView(insertOnly, len).removed, []);
});

test("the proposal's edits turn the document into the range's new text", () => {
  assert.equal(applyEdits(TEXT, proposal("a").edits), "def f(x):\n    y = x * 2\n    return y\n");
  const two = [
    { range: r(0, 4, 0, 5), newText: "g" },
    { range: r(2, 11, 2, 12), newText: "y + 0" },
  ];
  assert.equal(applyEdits(TEXT, two), "def g(x):\n    y = x + 1\n    return y + 0\n");
});

test("the book finds the proposal at the cursor, and a change in its range drops it", () => {
  const book = new ProposalBook();
  book.add(proposal("a", r(0, 0, 0, 9)));
  book.add(proposal("b", r(2, 0, 2, 12)));
  assert.equal(book.at("file:///f.py", 0)?.id, "a");
  assert.equal(book.at("file:///f.py", 1)?.id, "b"); // no proposal on the line: the newest
  assert.deepEqual(book.dropTouched("file:///f.py", [r(2, 5, 2, 5)]), ["b"]);
  assert.deepEqual(book.forUri("file:///f.py").map((p) => p.id), ["a"]);
  book.dropUri("file:///f.py");
  assert.equal(book.at("file:///f.py", 0), undefined);
});

test("a second proposal for the same range replaces the first instead of stacking", () => {
  const book = new ProposalBook();
  book.add(proposal("a", r(0, 0, 0, 9)));
  book.add(proposal("b", r(2, 0, 2, 12)));
  assert.deepEqual(book.add(proposal("c", r(0, 0, 0, 9))), ["a"]);
  assert.deepEqual(book.forUri("file:///f.py").map((p) => p.id), ["b", "c"]);
  book.add({ ...proposal("d", r(1, 0, 1, 3)), replaces: ["b"] }); // as the server says
  assert.deepEqual(book.forUri("file:///f.py").map((p) => p.id), ["c", "d"]);
});

test("only a real proposal in a command's answer is shown", () => {
  assert.equal(proposalOf({ proposal: proposal("a") })?.id, "a");
  assert.equal(proposalOf({ applied: true, edits: 1 }), undefined);
  assert.equal(proposalOf({ proposal: null }), undefined);
  assert.equal(proposalOf(undefined), undefined);
});
