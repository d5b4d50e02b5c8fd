import { test } from "node:test";
import assert from "node:assert/strict";
import { clientStateStatus, crashMessage, RestartPolicy } from "../src/recover";

test("a crashed server is restarted three times a minute, after growing waits, then stays stopped", () => {
  let now = 0;
  const policy = new RestartPolicy(() => now);
  assert.deepEqual(policy.next(), { delayMs: 200, first: true });
  now += 5_000;
  assert.deepEqual(policy.next(), { delayMs: 2000, first: false });
  now += 5_000;
  assert.deepEqual(policy.next(), { delayMs: 10000, first: false });
  now += 5_000;
  assert.equal(policy.next(), undefined);
  assert.match(crashMessage(undefined), /stays stopped.*Restart Server/);
});

test("a minute later the tries start over, and so they do after a restart by hand", () => {
  let now = 0;
  const policy = new RestartPolicy(() => now);
  policy.next();
  policy.next();
  policy.next();
  now += 61_000;
  assert.deepEqual(policy.next(), { delayMs: 200, first: true });
  policy.next();
  policy.next();
  policy.reset();
  assert.deepEqual(policy.next(), { delayMs: 200, first: true });
  assert.match(crashMessage({ delayMs: 200, first: true }), /restarting it/);
});

test("the status keeps saying restarting through the client's own stopped and starting", () => {
  // A crash: the close handler says "restarting"; vscode-languageclient then goes Stopped,
  // Starting, Running before the new server reports "loading".
  let last: string | undefined = "restarting";
  const shown: string[] = [];
  for (const state of ["stopped", "starting", "running"] as const) {
    const next = clientStateStatus(state, last);
    if (next) shown.push((last = next));
  }
  assert.deepEqual(shown, []);
  // A start by hand or the first one: the client's own states show until the server reports.
  assert.equal(clientStateStatus("starting", "ready"), "starting");
  assert.equal(clientStateStatus("starting", undefined), "starting");
  assert.equal(clientStateStatus("stopped", "ready"), "stopped");
  assert.equal(clientStateStatus("stopped", "stopped"), undefined);
  assert.equal(clientStateStatus("running", "starting"), undefined);
  // A restart whose process does not start is not "restarting" forever.
  assert.equal(clientStateStatus("startFailed", "restarting"), "stopped");
  assert.equal(clientStateStatus("startFailed", "error"), undefined);
});
