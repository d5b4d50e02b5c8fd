// What the extension sends the server, computed from VS Code's configuration without
// importing `vscode`, so it can be unit-tested under plain Node.

// generated from src/difill/server/config.py by `python -m difill.server.settings_clients --write`: begin
/** The server's settings (server/config.py), by their camelCase keys. */
export const SERVER_SETTING_KEYS = [
  "modelPath",
  "device",
  "engine",
  "ggufPath",
  "llamacppWorker",
  "llamacppThreads",
  "llamacppGpuLayers",
  "remote",
  "remoteKind",
  "remoteCanvas",
  "contextDrafts",
  "maxTokens",
  "minTokenProb",
  "minShowProbability",
  "commentSuggestions",
  "editGate",
  "steps",
  "candidates",
  "languages",
  "contextTokens",
  "previews",
  "holeMarker",
  "debounceMs",
  "loadWaitMs",
  "logFile",
  "workspaceIndex",
  "indexMaxFiles",
  "indexMaxBytes",
  "indexMaxFileBytes",
  "snippetTokens",
  "projectPython",
  "contextExclude",
  "nextEdit",
] as const;
/** Paths and URLs whose empty value means the server's default. */
export const PATH_KEYS = [
  "modelPath",
  "ggufPath",
  "llamacppWorker",
  "remote",
  "logFile",
  "projectPython",
] as const;
/** Settings that choose where code goes, which files load as a model, which program runs or which
 *  file the server writes: a workspace (a cloned repository's .vscode/settings.json) may not set
 *  them behind the user's back. The server's config.DESTINATION_KEYS, and package.json's
 *  restrictedConfigurations. */
export const DESTINATION_KEYS = [
  "modelPath",
  "ggufPath",
  "llamacppWorker",
  "remote",
  "logFile",
  "projectPython",
] as const;
// generated: end

export type ServerSettingKey = (typeof SERVER_SETTING_KEYS)[number];
export type ServerSettings = Partial<Record<ServerSettingKey | "userApproved", unknown>>;

/** Reads one `difill.*` key; `vscode.WorkspaceConfiguration.get` fits. */
export type ConfigGetter = (key: string) => unknown;

/** The server's section, `{ difill: {...} }`, as workspace/didChangeConfiguration carries it
 *  (initializationOptions carry the inner object). Unset keys are left out so the server's
 *  defaults apply; an empty path or remote is left out too. */
export function serverSettings(get: ConfigGetter): { difill: ServerSettings } {
  const out: ServerSettings = {};
  for (const key of SERVER_SETTING_KEYS) {
    const value = get(key);
    if (value === undefined || value === null) continue;
    // Empty model path / remote URL: the shipped model, run locally (the server's defaults).
    if ((PATH_KEYS as readonly string[]).includes(key) && typeof value === "string" && value.trim() === "") continue;
    out[key] = value;
  }
  return { difill: out };
}

/** The server's settings with `logFile` at ``defaultLogFile`` unless the user named a file: the
 *  server always keeps a log that the output channel can point to. */
export function withLogFile(settings: { difill: ServerSettings }, defaultLogFile: string): { difill: ServerSettings } {
  return { difill: { ...settings.difill, logFile: settings.difill.logFile ?? defaultLogFile } };
}

export type DestinationKey = (typeof DESTINATION_KEYS)[number];

/** Beside the settings: the destination values the user chose (server/config.py APPROVED). */
export const APPROVED_KEY = "userApproved";

/** ``settings`` with ``userApproved``: every destination value sent is the user's own or one the
 *  user allowed in the approval modal (``withApprovedDestinations``), and the server, which
 *  refuses a value a workspace's settings file names (for clients that never ask), takes these. */
export function withApprovals(settings: { difill: ServerSettings }): { difill: ServerSettings } {
  const approved: Record<string, string> = {};
  for (const key of DESTINATION_KEYS) {
    const value = settings.difill[key];
    if (typeof value === "string") approved[key] = value;
  }
  return { difill: { ...settings.difill, [APPROVED_KEY]: approved } };
}

/** What `WorkspaceConfiguration.inspect` tells of one key (the fields difill reads). */
export interface Inspected {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/** The value a workspace sets for a destination key over the user's own, if it sets one. */
export function workspaceOverride(inspected: Inspected | undefined): string | undefined {
  const value = inspected?.workspaceFolderValue ?? inspected?.workspaceValue;
  if (typeof value !== "string" || value.trim() === "") return undefined;
  return value === inspected?.globalValue ? undefined : value;
}

/** The key under which the user's answer for a workspace's value is remembered. */
export function approvalKey(key: DestinationKey, value: string): string {
  return `difill.workspaceValue.${key}=${value}`;
}

/** ``get`` with each destination key's workspace value replaced by the user's own, unless the
 *  user allowed that value (``allowed``); every other key is read as it is. */
export function withApprovedDestinations(
  get: ConfigGetter,
  inspect: (key: string) => Inspected | undefined,
  allowed: (key: DestinationKey, value: string) => boolean,
): ConfigGetter {
  return (key: string) => {
    if (!(DESTINATION_KEYS as readonly string[]).includes(key)) return get(key);
    const inspected = inspect(key);
    const override = workspaceOverride(inspected);
    if (override === undefined || allowed(key as DestinationKey, override)) return get(key);
    return inspected?.globalValue;
  };
}

export interface ServerCommand {
  command: string;
  args: string[];
}

/** How to start `difill serve` (stdio): through a Python interpreter when one is set,
 *  else the `difill` executable (or whatever `difill.server.command` names). */
export function serverCommand(get: ConfigGetter): ServerCommand {
  const extra = asStrings(get("server.args"));
  const python = str(get("server.pythonPath"));
  if (python) {
    return { command: python, args: ["-m", "difill", "serve", ...extra] };
  }
  const command = str(get("server.command")) || "difill";
  return { command, args: ["serve", ...extra] };
}

/** Whether a configuration change needs a new server process rather than a
 *  didChangeConfiguration (the process's own command line changed). */
export function needsRestart(affects: (section: string) => boolean): boolean {
  return affects("difill.server");
}

function str(value: unknown): string {
  return typeof value === "string" ? value.trim() : "";
}

function asStrings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}
