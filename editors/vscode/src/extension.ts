// difill for VS Code: a thin vscode-languageclient over `difill serve`.
// Inline completion (ghost text), code actions with lazy resolve, workspace/applyEdit and
// $/progress while the model loads are all handled by vscode-languageclient itself; this file
// adds the commands, the status bar item and the settings plumbing.
import * as path from "path";
import * as vscode from "vscode";
import {
  CloseAction,
  CloseHandlerResult,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from "vscode-languageclient/node";
import type { CodeAction as LspCodeAction } from "vscode-languageclient/node";
import { asksInstruction, effectiveRange, findAction, SelectionArgs } from "./actions";
import {
  approvalKey,
  ConfigGetter,
  DESTINATION_KEYS,
  DestinationKey,
  needsRestart,
  serverCommand,
  serverSettings,
  withApprovals,
  withApprovedDestinations,
  withLogFile,
  workspaceOverride,
} from "./settings";
import { Pacer } from "./pacing";
import { becameReady, previewText, StatusParams, statusLogLine, statusView } from "./status";
import { Proposals, proposalsCapability } from "./proposals";
import { Preview, proposalOf } from "./proposalView";
import { NextEdits } from "./nextEdits";
import { GhostText } from "./nextEditView";
import { ClientState, clientStateStatus, crashMessage, RestartPolicy } from "./recover";

let client: LanguageClient | undefined;
let output: vscode.LogOutputChannel;
let statusItem: vscode.StatusBarItem;
let lastLatencyMs: number | undefined;
let lastState: string | undefined; // the last difill/status state, to see the model become ready
let defaultLogFile = ""; // server.log in the extension's log folder: the logFile setting's default
const pacer = new Pacer(); // adaptive debounce of ghost-text requests (src/pacing.ts)
let proposals: Proposals; // edits shown for review before they land (proposals.ts)
const ghost = new GhostText(); // where difill's ghost text is shown: no next edit competes with it
let nextEdits: NextEdits | undefined;
const restarts = new RestartPolicy(); // a crashed server's restarts (recover.ts)
const CLIENT_STATES: Record<State, ClientState> = {
  [State.Starting]: "starting",
  [State.Running]: "running",
  [State.Stopped]: "stopped",
  [State.StartFailed]: "startFailed",
};

let answers: vscode.Memento | undefined; // the user's answers about workspace values, per workspace

const config = () => vscode.workspace.getConfiguration("difill");

/** The command the "Edit selection with instruction..." code action runs (not in the palette). */
const ASK_AND_EDIT = "difill.editSelectionFromCodeAction";

/** The settings sent to the server, with the log file at its default location unless set. */
const settingsForServer = () => withApprovals(withLogFile(serverSettings(serverConfig()), defaultLogFile));

/** Where the server writes its log (the logFile setting, or its default). */
const logFile = () => String(settingsForServer().difill.logFile);

/** The settings the server gets: a workspace's modelPath, remote, projectPython... only once the
 *  user allowed it. */
const serverConfig = (): ConfigGetter =>
  withApprovedDestinations(
    (k) => config().get(k),
    (k) => config().inspect(k),
    (key, value) => answers?.get<boolean>(approvalKey(key, value)) === true,
  );

/** Ask once per workspace value whether a workspace may choose where code goes (remote), what
 *  loads as a model (modelPath), which program runs (projectPython); the answer is remembered for
 *  this workspace. */
async function askAboutWorkspaceDestinations(): Promise<void> {
  // An untrusted workspace's values for these are ignored by VS Code itself (restrictedConfigurations).
  if (!vscode.workspace.isTrusted) return;
  for (const key of DESTINATION_KEYS) {
    const value = workspaceOverride(config().inspect(key));
    if (value === undefined || answers?.get<boolean>(approvalKey(key, value)) !== undefined) continue;
    const what = DESTINATION_WORDS[key];
    const choice = await vscode.window.showWarningMessage(
      `This workspace sets difill.${key}: difill then ${what} ${value}. Allow it for this workspace?`,
      { modal: true },
      "Allow",
      "Use my settings",
    );
    await answers?.update(approvalKey(key, value), choice === "Allow");
  }
}

/** What difill does with each destination's value, for the approval modal. */
const DESTINATION_WORDS: Record<DestinationKey, string> = {
  modelPath: "loads a model from",
  remote: "sends your code to",
  ggufPath: "loads a model from",
  llamacppWorker: "runs the program",
  logFile: "writes its log to",
  projectPython: "runs the program",
};

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("difill", { log: true });
  statusItem = vscode.window.createStatusBarItem("difill.status", vscode.StatusBarAlignment.Right, 100);
  statusItem.name = "difill";
  statusItem.command = "difill.showOutput";
  context.subscriptions.push(output, statusItem);
  answers = context.workspaceState;
  defaultLogFile = path.join(context.logUri.fsPath, "server.log");
  proposals = new Proposals(() => client, (message) => output.info(message));
  context.subscriptions.push(proposals);
  // The next edit after each finished edit (textDocument/copilotInlineEdit): Tab jumps, Tab
  // accepts; Tab takes ghost text first.
  nextEdits = new NextEdits(
    () => client,
    () => config().get("nextEdit"),
    (message) => output.info(message),
    vscode.Uri.joinPath(context.extensionUri, "media", "next-edit.svg"),
    ghost,
  );
  context.subscriptions.push(nextEdits);

  context.subscriptions.push(
    vscode.commands.registerCommand("difill.editSelectionWithInstruction", editSelectionWithInstruction),
    vscode.commands.registerCommand("difill.rewriteSelection", rewriteSelection),
    vscode.commands.registerCommand("difill.fillHolesInSelection", fillHoles),
    vscode.commands.registerCommand("difill.restartServer", restart),
    vscode.commands.registerCommand(ASK_AND_EDIT, editWithInstructionFromAction),
    vscode.commands.registerCommand("difill.showOutput", () => output.show(true)),
    vscode.commands.registerCommand("difill.openLog", async () => {
      try {
        await vscode.window.showTextDocument(vscode.Uri.file(logFile()), { preview: true });
      } catch (err) {
        void vscode.window.showWarningMessage(`difill: cannot open the server log ${logFile()}: ${err}`);
      }
    }),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (!e.affectsConfiguration("difill")) return;
      await askAboutWorkspaceDestinations();
      if (needsRestart((s) => e.affectsConfiguration(s))) {
        await restart();
      } else {
        // Only the server's own keys: sending difill.server.* would be reported as unknown.
        await client?.sendNotification("workspace/didChangeConfiguration", { settings: settingsForServer() });
      }
    }),
    { dispose: () => void client?.stop() },
  );
  await askAboutWorkspaceDestinations();
  await start();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}

function createClient(): LanguageClient {
  const { command, args } = serverCommand((k) => config().get(k));
  // No `transport`: TransportKind.stdio would append `--stdio`, which `difill serve` rejects;
  // without it the client still talks over the process's stdin/stdout.
  const serverOptions: ServerOptions = { command, args };
  const clientOptions: LanguageClientOptions = {
    // Every file, so every language with a grammar (docs/languages.md) and the rest: the server
    // decides by its `languages` setting, which may change at run time, and by the languages the
    // model was trained on.  No `language` filter here (tests/editors/test_vscode_extension.py).
    documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
    // Flat in initializationOptions, nested under `difill` in didChangeConfiguration.
    initializationOptions: settingsForServer().difill,
    outputChannel: output,
    // A server that dies is restarted by vscode-languageclient (which opens every document on the
    // new one again), at most three times a minute; said once, the status item says the rest.
    errorHandler: {
      // As vscode-languageclient's default: a few errors on the connection are let pass.
      error: (_error, _message, count) => ({ action: count && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown }),
      closed: () => serverClosed(c),
    },
    middleware: {
      // Ghost text: wait only while the server is busy or slow, and drop a request that a newer
      // keystroke cancelled during the wait.
      provideInlineCompletionItems: async (document, position, context, token, next) => {
        if (!(await pacer.wait(token))) return undefined;
        const answer = await pacer.track(async () => next(document, position, context, token));
        // Ghost text for this version at this cursor: no next edit is asked while it is shown.
        const items = Array.isArray(answer) ? answer.length : (answer?.items.length ?? 0);
        if (!token.isCancellationRequested) {
          const at = { uri: document.uri.toString(), version: document.version, line: position.line, character: position.character };
          ghost.answered(at, items);
          nextEdits?.ghostChanged();
        }
        return answer;
      },
      // "Rewrite selection" and "Edit selection with instruction..." both carry difill.editSelection
      // without an instruction; only the title tells them apart. The second goes through a client
      // command that asks for the instruction first; the first runs at once from the menu.
      provideCodeActions: async (document, range, context, token, next) => {
        const actions = await next(document, range, context, token);
        for (const action of actions ?? []) {
          if (action instanceof vscode.CodeAction && action.command && asksInstruction({ title: action.title, command: action.command })) {
            action.command = { ...action.command, command: ASK_AND_EDIT, arguments: action.command.arguments };
          }
        }
        return actions;
      },
      // A code action's command: the answer may be a proposal to show for review.
      executeCommand: async (cmd, args, next) => showProposal(await next(cmd, args)),
    },
  };
  const c = new LanguageClient("difill", "difill", serverOptions, clientOptions);
  c.registerFeature(proposalsCapability);
  c.onDidChangeState((e) => {
    // While a crashed server restarts, the status keeps saying so until the new one reports.
    const shown = clientStateStatus(CLIENT_STATES[e.newState], lastState);
    if (shown) showStatus({ state: shown });
  });
  return c;
}

async function start(): Promise<void> {
  client = createClient();
  showStatus({ state: "starting" });
  output.info(`difill: the server's log is ${logFile()} (difill: Open Server Log)`);
  // Registered before start so the first "loading" is not missed.
  client.onNotification("difill/status", (params: StatusParams) => showStatus(params));
  client.onNotification("difill/preview", (params: Preview) => {
    // The last preview (done) comes after the server's "ready": it must not hide it.
    if (!params.done) statusItem.text = previewText(params);
    proposals.onPreview(params);
  });
  try {
    await client.start();
  } catch (err) {
    showStatus({ state: "error", message: String(err) });
    output.error(`difill serve failed to start: ${err}`);
    void vscode.window
      .showErrorMessage(`difill: the server did not start (${err}). Check difill.server.* settings.`, "Show Output")
      .then((choice) => choice && output.show(true));
  }
}

/** The close handler: restart a server that ran and died (after the policy's wait), or leave it
 *  stopped; a server that never started is reported by start() instead. */
async function serverClosed(c: LanguageClient): Promise<CloseHandlerResult> {
  const ran = c.state === State.Running;
  const plan = ran ? restarts.next() : undefined;
  const message = crashMessage(plan);
  if (!ran) return { action: CloseAction.DoNotRestart, handled: true };
  output.warn(message);
  if (!plan) {
    showStatus({ state: "stopped", message });
    void vscode.window.showErrorMessage(message);
    return { action: CloseAction.DoNotRestart, message, handled: true };
  }
  showStatus({ state: "restarting", message });
  if (plan.first) void vscode.window.showWarningMessage(message);
  await new Promise((resolve) => setTimeout(resolve, plan.delayMs));
  return { action: CloseAction.Restart, message, handled: true };
}

async function restart(): Promise<void> {
  restarts.reset();
  const old = client;
  client = undefined;
  try {
    await old?.stop();
  } catch (err) {
    output.warn(`stopping the old server: ${err}`);
  }
  await start();
}

/** Show an edit command's answer for review when it is a proposal; returns the answer. */
function showProposal<T>(answer: T): T {
  const proposal = proposalOf(answer);
  if (proposal) proposals.show(proposal);
  return answer;
}

function showStatus(params: StatusParams): void {
  if (params.latencyMs !== undefined) lastLatencyMs = params.latencyMs;
  const logLine = statusLogLine(params);
  if (logLine) output.info(logLine);
  // Text typed while the model loaded was answered with nothing: ask again at the cursor now,
  // rather than after the next keystroke.
  if (becameReady(lastState, params.state) && vscode.window.activeTextEditor) {
    void vscode.commands.executeCommand("editor.action.inlineSuggest.trigger");
  }
  lastState = params.state;
  // The median of the last answers paces requests; one answer's latency is the fallback.
  pacer.latencyMs = params.recentLatencyMs ?? params.latencyMs ?? pacer.latencyMs;
  const view = statusView(params, lastLatencyMs);
  statusItem.text = view.text;
  statusItem.tooltip = view.tooltip;
  statusItem.backgroundColor = view.error ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
  statusItem.show();
}

async function askInstruction(): Promise<string | undefined> {
  const text = await vscode.window.showInputBox({
    title: "difill: Edit Selection",
    prompt: "How should the selection change?",
    placeHolder: "e.g. add type hints",
    ignoreFocusOut: true,
  });
  return text?.trim() || undefined;
}

/** The active editor's document and selection as the server's command argument. */
function selectionArgs(editor: vscode.TextEditor, wholeDocumentIfEmpty = false): SelectionArgs | undefined {
  const c = client;
  if (!c || !c.isRunning()) {
    void vscode.window.showWarningMessage("difill: the server is not running (difill: Restart Server).");
    return undefined;
  }
  const doc = editor.document;
  const sel = editor.selection;
  let range = c.code2ProtocolConverter.asRange(sel);
  if (sel.isEmpty && wholeDocumentIfEmpty) {
    range = c.code2ProtocolConverter.asRange(new vscode.Range(new vscode.Position(0, 0), doc.lineAt(doc.lineCount - 1).range.end));
  } else {
    range = effectiveRange(range, (line) => doc.lineAt(line).text.length);
  }
  // The selection is collapsed to its start, so the canvas and the proposal drawn over it are
  // not hidden under the selection's colour (and Tab accepts rather than indents).
  editor.selection = new vscode.Selection(sel.start, sel.start);
  return { uri: c.code2ProtocolConverter.asUri(doc.uri), range, version: doc.version };
}

async function runServerCommand(command: string, args: SelectionArgs): Promise<void> {
  try {
    // The server answers with a proposal to review (this client declares editProposals); an
    // older server sends workspace/applyEdit, which vscode-languageclient applies.
    showProposal(await client!.sendRequest(ExecuteCommandRequest.type, { command, arguments: [args] }));
  } catch (err) {
    void vscode.window.showErrorMessage(`difill: ${err instanceof Error ? err.message : String(err)}`);
  }
}

async function editSelectionWithInstruction(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) return;
  const instruction = await askInstruction();
  if (!instruction) return;
  const args = selectionArgs(editor);
  if (!args) return;
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: "difill: editing" },
    () => runServerCommand("difill.editSelection", { ...args, instruction }),
  );
}

/** The "Edit selection with instruction..." code action: ask, then edit the action's selection. */
async function editWithInstructionFromAction(args: SelectionArgs): Promise<void> {
  const instruction = await askInstruction();
  if (!instruction || !client?.isRunning()) return;
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: "difill: editing" },
    () => runServerCommand("difill.editSelection", { ...args, instruction }),
  );
}

async function fillHoles(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  const args = editor && selectionArgs(editor, true);
  if (!args) return;
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: "difill: filling holes" },
    () => runServerCommand("difill.fillHoles", args),
  );
}

/** The server's "Rewrite selection" code action: ask for refactor.rewrite actions on the
 *  selection, resolve the rewrite lazily (codeAction/resolve), apply its edit. */
async function rewriteSelection(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  const c = client;
  const args = editor && selectionArgs(editor);
  if (!editor || !c || !args) return;
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: "difill: rewriting" },
    async () => {
      const actions = (await c.sendRequest("textDocument/codeAction", {
        textDocument: { uri: args.uri },
        range: args.range,
        context: { diagnostics: [], only: ["refactor.rewrite"], triggerKind: 1 },
      })) as LspCodeAction[] | null;
      const found = findAction(actions, "Rewrite");
      if (!found) {
        void vscode.window.showInformationMessage("difill: no rewrite offered for this selection.");
        return;
      }
      const action = found.edit ? found : ((await c.sendRequest("codeAction/resolve", found)) as LspCodeAction);
      if (action.edit) {
        await vscode.workspace.applyEdit(await c.protocol2CodeConverter.asWorkspaceEdit(action.edit));
      }
      if (action.command) {
        await vscode.commands.executeCommand(action.command.command, ...(action.command.arguments ?? []));
      }
    },
  );
}
