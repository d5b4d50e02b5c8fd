import { test } from "node:test";
import assert from "node:assert/strict";
import { becameReady, previewText, statusLogLine, statusView } from "../src/status";

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

test("a preview is one shortened line with its step", () => {
  const t = previewText({ text: "def f(x):\n    return " + "x".repeat(100), step: 3 }, 20);
  assert.equal(t, "$(sync~spin) difill step 3: def f(x): return xx…");
});

test("starting then loading both show the spinner while the model loads", () => {
  assert.equal(statusView({ state: "starting" }).text, "$(loading~spin) difill starting");
  const v = statusView({ state: "loading", message: "loading the model from /m" });
  assert.equal(v.text, "$(loading~spin) difill loading");
  assert.equal(v.error, false);
});

test("ghost text is asked for again when the model becomes ready, not after every answer", () => {
  assert.equal(becameReady("loading", "ready"), true);
  assert.equal(becameReady("starting", "ready"), true);
  assert.equal(becameReady(undefined, "ready"), true);
  assert.equal(becameReady("busy", "ready"), false);
  assert.equal(becameReady("ready", "ready"), false);
  assert.equal(becameReady("loading", "error"), false);
});

test("the output channel records the model loaded and errors, not every answer", () => {
  assert.equal(statusLogLine({ state: "ready", message: "model loaded from /m (torch) in 2.0 s" }),
    "difill: model loaded from /m (torch) in 2.0 s");
  assert.equal(statusLogLine({ state: "ready", latencyMs: 40 }), undefined);
  assert.equal(statusLogLine({ state: "error", message: "no model at /x" }), "difill error: no model at /x");
  assert.equal(statusLogLine({ state: "busy" }), undefined);
});

test("each state the client shows: loading, ready, learning this project, error, restarting, stopped", () => {
  assert.equal(statusView({ state: "learning", message: "40%" }).text, "$(mortar-board) difill learning this project");
  assert.match(statusView({ state: "learning" }).tooltip, /^difill: learning this project/);
  assert.equal(statusView({ state: "restarting" }).text, "$(debug-restart) difill restarting");
  assert.equal(statusView({ state: "stopped", message: "restarted 3 times" }).text, "$(circle-slash) difill stopped");
  assert.equal(statusView({ state: "learning" }).error, false);
});

test("a restarted server becoming ready asks for ghost text again", () => {
  assert.equal(becameReady("restarting", "ready"), true);
  assert.equal(becameReady("stopped", "ready"), true);
});
