import { test } from "node:test";
import assert from "node:assert/strict";
import { crashMessage, RestartPolicy } from "../src/recover";

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
