import { test } from "node:test";
import assert from "node:assert/strict";
import {
  needsRestart,
  serverCommand,
  serverSettings,
  SERVER_SETTING_KEYS,
  withApprovals,
  withApprovedDestinations,
  withLogFile,
  workspaceOverride,
} from "../src/settings";

const getter = (values: Record<string, unknown>) => (key: string) => values[key];

test("server settings are nested under difill and leave out unset keys", () => {
  const s = serverSettings(getter({ maxTokens: 16, device: "cpu", languages: ["python"], steps: undefined }));
  assert.deepEqual(s, { difill: { maxTokens: 16, device: "cpu", languages: ["python"] } });
});

test("an empty model path or remote means the local shipped model and is not sent", () => {
  assert.deepEqual(serverSettings(getter({ modelPath: "  ", remote: "" })), { difill: {} });
  assert.deepEqual(serverSettings(getter({ modelPath: "/m" })), { difill: { modelPath: "/m" } });
  assert.deepEqual(serverSettings(getter({ ggufPath: "", llamacppWorker: " " })), { difill: {} });
  assert.deepEqual(serverSettings(getter({ engine: "llamacpp", ggufPath: "/m.gguf" })), {
    difill: { engine: "llamacpp", ggufPath: "/m.gguf" },
  });
});

test("a workspace cannot pick the GGUF or the llama.cpp worker behind the user's back", () => {
  const inspect = (key: string) =>
    ({ ggufPath: { globalValue: "/mine.gguf", workspaceValue: "/repo.gguf" },
       llamacppWorker: { workspaceValue: "./evil" } })[key];  // prettier-ignore
  const values: Record<string, string> = { ggufPath: "/repo.gguf", llamacppWorker: "./evil" };
  const get = withApprovedDestinations((k) => values[k], inspect, () => false);
  assert.equal(get("ggufPath"), "/mine.gguf");
  assert.equal(get("llamacppWorker"), undefined);
});

test("client-only settings never reach the server", () => {
  const s = serverSettings(getter({ "server.command": "x", "server.args": ["--y"], previews: true }));
  assert.deepEqual(s, { difill: { previews: true } });
});

test("every server setting is forwarded", () => {
  const values = Object.fromEntries(SERVER_SETTING_KEYS.map((k, i) => [k, i]));
  assert.deepEqual(Object.keys(serverSettings(getter(values)).difill).sort(), [...SERVER_SETTING_KEYS].sort());
});

test("the server starts as `difill serve` by default", () => {
  assert.deepEqual(serverCommand(getter({})), { command: "difill", args: ["serve"] });
});

test("a configured command and extra arguments are used", () => {
  const cmd = serverCommand(getter({ "server.command": "/opt/difill/bin/difill", "server.args": ["--log-file", "/tmp/l"] }));
  assert.deepEqual(cmd, { command: "/opt/difill/bin/difill", args: ["serve", "--log-file", "/tmp/l"] });
});

test("a Python path runs the server as a module and wins over the command", () => {
  const cmd = serverCommand(getter({ "server.pythonPath": "/venv/bin/python", "server.command": "ignored" }));
  assert.deepEqual(cmd, { command: "/venv/bin/python", args: ["-m", "difill", "serve"] });
});

test("only a change to difill.server.* restarts the server", () => {
  assert.equal(needsRestart((s) => s === "difill.server"), true);
  assert.equal(needsRestart((s) => s === "difill"), false);
});

test("a workspace value for remote or modelPath is an override only when it differs from the user's", () => {
  assert.equal(workspaceOverride({ globalValue: "http://mine", workspaceValue: "http://theirs" }), "http://theirs");
  assert.equal(workspaceOverride({ workspaceFolderValue: "/m", workspaceValue: "/other" }), "/m");
  assert.equal(workspaceOverride({ globalValue: "http://mine", workspaceValue: "http://mine" }), undefined);
  assert.equal(workspaceOverride({ workspaceValue: "  " }), undefined);
  assert.equal(workspaceOverride(undefined), undefined);
});

test("a workspace's remote is used only once the user allowed it; else the user's own value", () => {
  const merged: Record<string, unknown> = { remote: "http://theirs", maxTokens: 8 };
  const inspected = { remote: { globalValue: "http://mine", workspaceValue: "http://theirs" } };
  const inspect = (k: string) => (inspected as Record<string, { globalValue?: unknown }>)[k];
  const refused = withApprovedDestinations(getter(merged), inspect, () => false);
  assert.equal(refused("remote"), "http://mine");
  assert.equal(refused("maxTokens"), 8); // other settings come from the workspace as usual
  assert.deepEqual(serverSettings(refused), { difill: { remote: "http://mine", maxTokens: 8 } });
  const allowed = withApprovedDestinations(getter(merged), inspect, (k, v) => k === "remote" && v === "http://theirs");
  assert.equal(allowed("remote"), "http://theirs");
});

test("without a user value, a refused workspace remote means none: the local model", () => {
  const get = withApprovedDestinations(getter({ remote: "http://theirs" }), () => ({ workspaceValue: "http://theirs" }), () => false);
  assert.deepEqual(serverSettings(get), { difill: {} });
});

test("the server keeps a log at the default location unless the user names a file", () => {
  assert.deepEqual(withLogFile(serverSettings(getter({ logFile: "" })), "/logs/server.log"), {
    difill: { logFile: "/logs/server.log" },
  });
  assert.deepEqual(withLogFile(serverSettings(getter({ logFile: "/mine.log" })), "/logs/server.log"), {
    difill: { logFile: "/mine.log" },
  });
});

test("a workspace's projectPython runs only once the user allowed it (issue 62)", () => {
  const inspect = (key: string) => ({ projectPython: { workspaceValue: "./tools/python" } })[key];
  const values: Record<string, string> = { projectPython: "./tools/python" };
  assert.equal(withApprovedDestinations((k) => values[k], inspect, () => false)("projectPython"), undefined);
  const allowed = withApprovedDestinations((k) => values[k], inspect, (k, v) => k === "projectPython" && v === "./tools/python");
  assert.equal(allowed("projectPython"), "./tools/python");
});

test("the destination values sent are also sent as the user's approvals, and nothing else is", () => {
  const settings = withApprovals({ difill: { projectPython: "/venv/bin/python", remote: "http://mine", maxTokens: 8 } });
  assert.deepEqual(settings.difill.userApproved, { projectPython: "/venv/bin/python", remote: "http://mine" });
  assert.equal(settings.difill.maxTokens, 8);
  assert.deepEqual(withApprovals({ difill: {} }).difill.userApproved, {});
});
