import { test } from "node:test";
import assert from "node:assert/strict";
import { debounceFor, Pacer } from "../src/pacing";

test("no wait while the server is idle and fast", () => {
  assert.equal(debounceFor(undefined, 0), 0);
  assert.equal(debounceFor(80, 0), 0);
});

test("half the latency while busy or slow, within 25-250 ms", () => {
  assert.equal(debounceFor(400, 0), 200);
  assert.equal(debounceFor(80, 1), 40);
  assert.equal(debounceFor(10, 1), 25);
  assert.equal(debounceFor(1000, 2), 250);
});

test("a request cancelled during the wait is not sent", async () => {
  const pacer = new Pacer();
  pacer.latencyMs = 400;
  const token = { isCancellationRequested: false, onCancellationRequested: () => ({ dispose() {} }) };
  const waited: number[] = [];
  const go = await pacer.wait(token as never, async (ms) => {
    waited.push(ms);
    token.isCancellationRequested = true; // the next key arrived meanwhile
  });
  assert.deepEqual(waited, [200]);
  assert.equal(go, false);
});

test("requests count as in flight until they settle, also when they fail", async () => {
  const pacer = new Pacer();
  let seen = -1;
  await pacer.track(async () => {
    seen = pacer.inFlight;
  });
  assert.equal(seen, 1);
  await assert.rejects(pacer.track(async () => Promise.reject(new Error("x"))));
  assert.equal(pacer.inFlight, 0);
});
