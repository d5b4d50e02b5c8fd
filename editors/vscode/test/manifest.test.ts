// package.json is the other half of the extension: check it against the code.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { DESTINATION_KEYS, SERVER_SETTING_KEYS } from "../src/settings";

const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "package.json"), "utf8"));
const properties: Record<string, unknown> = manifest.contributes.configuration.properties;
const srcDir = join(__dirname, "..", "..", "src");
const source = readdirSync(srcDir)
  .filter((f) => f.endsWith(".ts"))
  .map((f) => readFileSync(join(srcDir, f), "utf8"))
  .join("\n");

test("every server setting is a contributed configuration property", () => {
  for (const key of SERVER_SETTING_KEYS) assert.ok(`difill.${key}` in properties, `difill.${key} missing`);
});

test("no contributed property is unknown to both the server and the client", () => {
  const known = new Set([...SERVER_SETTING_KEYS.map((k) => `difill.${k}`), "difill.server.command", "difill.server.pythonPath", "difill.server.args"]);
  for (const key of Object.keys(properties)) assert.ok(known.has(key), `${key} is read by nobody`);
});

test("client command ids do not collide with the server's executeCommand ids", () => {
  // vscode-languageclient registers the server's commands itself; a second registration throws.
  const ids: string[] = manifest.contributes.commands.map((c: { command: string }) => c.command);
  assert.ok(!ids.includes("difill.editSelection") && !ids.includes("difill.fillHoles"));
});

test("every contributed command is registered by the extension", () => {
  for (const { command } of manifest.contributes.commands) {
    assert.ok(source.includes(`registerCommand("${command}"`), `${command} is not registered`);
  }
});

test("the issue's commands exist: edit with instruction, rewrite, fill holes, restart, output", () => {
  const titles = manifest.contributes.commands.map((c: { title: string }) => c.title);
  for (const t of ["Edit Selection with Instruction...", "Rewrite Selection", "Fill Holes", "Restart Server", "Show Output"]) {
    assert.ok(titles.includes(t), t);
  }
});

test("a workspace cannot choose the program the extension runs, nor where code goes", () => {
  // machine scope: only the user's own settings, never a cloned repository's .vscode/settings.json
  for (const key of ["difill.server.command", "difill.server.pythonPath", "difill.server.args"]) {
    assert.equal((properties[key] as { scope: string }).scope, "machine", `${key} must be machine-scoped`);
  }
  // In an untrusted workspace VS Code ignores the workspace's values of these; in a trusted one
  // the approval modal asks (DESTINATION_KEYS): one list for both.
  const untrusted = manifest.capabilities.untrustedWorkspaces;
  assert.equal(untrusted.supported, "limited");
  assert.deepEqual(
    [...untrusted.restrictedConfigurations].sort(),
    DESTINATION_KEYS.map((k) => `difill.${k}`).sort(),
  );
  for (const key of DESTINATION_KEYS) {
    const scope = (properties[`difill.${key}`] as { scope?: string }).scope;
    assert.ok(scope === "machine" || scope === "machine-overridable", `difill.${key} is ${scope}-scoped`);
  }
  for (const key of ["projectPython", "llamacppWorker", "logFile"]) {
    assert.ok((DESTINATION_KEYS as readonly string[]).includes(key), `${key} is no destination`);
  }
});

test("the client attaches to every language: its document selector filters by scheme only", () => {
  // Go, Rust, TypeScript, Ruby, ... (docs/languages.md): the server decides what it serves.
  const selector = /documentSelector: \[(.*?)\],/s.exec(source);
  assert.ok(selector, "documentSelector not found in src/extension.ts");
  assert.ok(!/language|pattern/.test(selector[1]), `documentSelector narrows the files: ${selector[1]}`);
  assert.match(selector[1], /scheme: "file"/);
});
