// Adaptive debounce for ghost text: how long the client waits after a keystroke before it asks.
// The same rule as the Neovim plugin (editors/neovim/lua/difill/ghost.lua `debounce_for`).
import type { CancellationToken } from "vscode-languageclient/node";

/** Milliseconds to wait before asking: none while the server is idle and answering fast (a typist
 *  at 6 keys a second leaves ~170 ms between keys, and a fixed wait eats into the time a suggestion
 *  has to reach the screen); while a request is still in flight or the server is slow, half its
 *  last latency, 25-250 ms, so a burst of keys does not queue requests the next key makes useless. */
export function debounceFor(latencyMs: number | undefined, inFlight: number): number {
  const latency = latencyMs ?? 0;
  if (inFlight === 0 && latency <= 150) return 0;
  return Math.floor(Math.min(250, Math.max(25, latency / 2)));
}

/** Tracks requests in flight and the server's last latency (difill/status `latencyMs`). */
export class Pacer {
  inFlight = 0;
  latencyMs: number | undefined;

  /** Wait as debounceFor says; false when the request was cancelled meanwhile (a newer key). */
  async wait(token: CancellationToken, sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))): Promise<boolean> {
    const ms = debounceFor(this.latencyMs, this.inFlight);
    if (ms > 0) await sleep(ms);
    return !token.isCancellationRequested;
  }

  /** Run one request, counted as in flight until it settles. */
  async track<T>(request: () => Promise<T>): Promise<T> {
    this.inFlight += 1;
    try {
      return await request();
    } finally {
      this.inFlight -= 1;
    }
  }
}
