import { test } from "node:test";
import assert from "node:assert/strict";
import { draftText, statusView } from "../src/status";

test("ready shows the latency", () => {
  const v = statusView({ state: "ready", latencyMs: 123.4 });
  assert.equal(v.text, "$(check) difill 123 ms");
  assert.equal(v.error, false);
});

test("busy keeps the last latency it knew", () => {
  const v = statusView({ state: "busy" }, 80);
  assert.equal(v.text, "$(sync~spin) difill busy 80 ms");
});

test("loading spins and shows no stale latency", () => {
  const v = statusView({ state: "loading", message: "loading model" }, 80);
  assert.equal(v.text, "$(loading~spin) difill loading");
  assert.match(v.tooltip, /loading model/);
});

test("error is flagged for the error background and explains itself", () => {
  const v = statusView({ state: "error", message: "no model at /x" });
  assert.equal(v.error, true);
  assert.match(v.text, /error/);
  assert.match(v.tooltip, /no model at \/x/);
});

test("a draft is one shortened line with its step", () => {
  const t = draftText({ text: "def f(x):\n    return " + "x".repeat(100), step: 3 }, 20);
  assert.equal(t, "$(sync~spin) difill step 3: def f(x): return xx…");
});
