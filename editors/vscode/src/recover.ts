// A server that dies comes back (issue 66), as in Neovim (editors/neovim/lua/difill/recover.lua):
// vscode-languageclient restarts it when the close handler says so; this is when, and what the
// status item says meanwhile (pure).
import type { ServerState } from "./status";

/** The waits before the first, second and third restart within a minute; then it stays stopped. */
export const RESTART_DELAYS_MS = [200, 2000, 10000];
export const WINDOW_MS = 60_000;

export interface RestartPlan {
  /** How long to wait before restarting. */
  delayMs: number;
  /** The first restart of its window: the one the user is told about (the rest show in the status). */
  first: boolean;
}

/** At most three restarts a minute, after growing waits; `reset` (difill: Restart Server) starts over. */
export class RestartPolicy {
  private tries: number[] = [];

  constructor(
    private readonly now: () => number = Date.now,
    private readonly delays: readonly number[] = RESTART_DELAYS_MS,
  ) {}

  /** The plan for the restart after a crash now, or undefined when the tries of the minute ran out. */
  next(): RestartPlan | undefined {
    const now = this.now();
    this.tries = this.tries.filter((t) => now - t < WINDOW_MS);
    if (this.tries.length >= this.delays.length) return undefined;
    this.tries.push(now);
    return { delayMs: this.delays[this.tries.length - 1], first: this.tries.length === 1 };
  }

  reset(): void {
    this.tries = [];
  }
}

/** What the user is told, once: the crash and the restart, or that it stays stopped. */
export function crashMessage(plan: RestartPlan | undefined): string {
  return plan
    ? "difill: the server stopped; restarting it (difill: Show Output)"
    : "difill: the server stopped 4 times in a minute: it stays stopped. difill: Restart Server once fixed (difill: Show Output)";
}

/** vscode-languageclient's state, by name (its State enum, which tests cannot import). */
export type ClientState = "starting" | "running" | "stopped" | "startFailed";

/** The status a client state change shows, if any (the server reports the rest). While a crashed
 *  server restarts, vscode-languageclient passes through "stopped" and "starting" within one
 *  restart: the item keeps saying "restarting" until the new server reports. A restart that fails
 *  to start the process says "stopped", not "restarting" forever. */
export function clientStateStatus(state: ClientState, lastState: string | undefined): ServerState | undefined {
  if (state === "startFailed") return lastState === "error" ? undefined : "stopped";
  if (lastState === "restarting") return undefined;
  if (state === "starting") return "starting";
  if (state === "stopped" && lastState !== "stopped") return "stopped";
  return undefined;
}
