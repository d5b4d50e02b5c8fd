// The status bar item's text for the server's difill/status notifications (pure).

// "learning": the server adapts its model to this project; "restarting": the server crashed and
// is started again (recover.ts); "stopped": it is not running (its restarts ran out, or stopped).
export type ServerState =
  | "starting"
  | "loading"
  | "ready"
  | "busy"
  | "learning"
  | "error"
  | "restarting"
  | "stopped";

export interface StatusParams {
  state: ServerState | string;
  message?: string;
  latencyMs?: number;
  recentLatencyMs?: number; // median of the server's last answers (its adaptive-debounce signal)
}

export interface StatusView {
  text: string;
  tooltip: string;
  error: boolean;
}

const ICONS: Record<string, string> = {
  starting: "$(loading~spin)",
  loading: "$(loading~spin)",
  busy: "$(sync~spin)",
  ready: "$(check)",
  learning: "$(mortar-board)",
  error: "$(error)",
  restarting: "$(debug-restart)",
  stopped: "$(circle-slash)",
};

/** How a state reads where it differs from its name. */
const WORDS: Record<string, string> = { learning: "learning this project" };

/** The latest status, keeping the last latency across notifications that carry none
 *  (a "busy" has no latency; showing the previous one until the next "ready" is useful). */
export function statusView(params: StatusParams, lastLatencyMs?: number): StatusView {
  const state = params.state || "ready";
  const latency = params.latencyMs ?? lastLatencyMs;
  const icon = ICONS[state] ?? "$(question)";
  const latencyText = latency !== undefined && state !== "loading" ? ` ${Math.round(latency)} ms` : "";
  const words = WORDS[state] ?? state;
  const text = `${icon} difill${state === "ready" ? "" : ` ${words}`}${latencyText}`;
  const lines = [`difill: ${words}`];
  if (params.message) lines.push(params.message);
  if (latency !== undefined) lines.push(`last answer: ${Math.round(latency)} ms`);
  lines.push("Click for the server output");
  return { text, tooltip: lines.join("\n"), error: state === "error" };
}

/** A preview from difill/preview, shortened for the status bar. */
export function previewText(params: { text?: string; step?: number }, width = 40): string {
  const oneLine = (params.text ?? "").replace(/\s+/g, " ").trim();
  const cut = oneLine.length > width ? `${oneLine.slice(0, width - 1)}…` : oneLine;
  return `$(sync~spin) difill step ${params.step ?? "?"}: ${cut}`;
}

/** Whether this status is the model becoming ready after it loaded (not a "ready" after each
 *  answer), a restarted server's included: the moment to ask for ghost text again, as requests
 *  made while it loaded got none. */
export function becameReady(previous: string | undefined, next: string): boolean {
  return (
    next === "ready" &&
    (previous === undefined || ["starting", "loading", "restarting", "stopped"].includes(previous))
  );
}

/** What the output channel records of a status: the model and engine once loaded, errors. */
export function statusLogLine(params: StatusParams): string | undefined {
  if (params.state === "ready" && params.message) return `difill: ${params.message}`;
  if (params.state === "error") return `difill error: ${params.message ?? "(no message)"}`;
  return undefined;
}
