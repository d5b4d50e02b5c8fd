// Next-edit suggestions in the editor (issue 35): after an edit, the server's next edit
// (textDocument/copilotInlineEdit) is drawn at its place as the proposals' inline diff - the old
// text struck through, the new text after it - with a marker in the gutter, on the cursor's line
// when the edit is off screen. Tab jumps to it, Tab again applies it (one undo step), Esc drops
// it. Any edit of the document drops it and asks again after a pause (nextEditView.ts Debouncer),
// cancelling a request still in flight; an edit is applied only to the version it was made for.
// Next edits and ghost text never compete (issue 63): a word at the cursor may still be typed, so
// the ask waits for a longer pause, the cursor leaving the word, or Esc; while difill's ghost text
// is shown nothing is asked, and the hint names the key that acts (Tab takes the ghost text).
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import { diffView } from "./proposalView";
import { afterText, asRange, REMOVED_TEXT } from "./proposals";
import {
  applicable,
  asProposal,
  AUTOMATIC,
  DEBOUNCE_MS,
  Debouncer,
  endOfTyped,
  GhostAt,
  GhostText,
  InlineEdit,
  inlineEditsOf,
  INVOKED,
  marker,
  METHOD,
  nextEditEnabled,
  Pending,
  SHOWN,
  tabAction,
  waitAfterEdit,
} from "./nextEditView";

const removedStyle = vscode.window.createTextEditorDecorationType({
  ...REMOVED_TEXT,
  overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.modifiedForeground"),
  overviewRulerLane: vscode.OverviewRulerLane.Center,
});
const addedStyle = vscode.window.createTextEditorDecorationType({});
const hintStyle = vscode.window.createTextEditorDecorationType({});

export class NextEdits implements vscode.Disposable {
  private shown: InlineEdit | undefined;
  private drawn = false; // decorations are on screen (cursor moves redraw only then)
  private debouncer: Debouncer<unknown>;
  private markerStyle: vscode.TextEditorDecorationType;
  private subscriptions: vscode.Disposable[] = [];
  private typedAt: GhostAt | undefined; // where the last edit left the cursor, while an ask waits
  private applying = false; // Tab is applying the next edit: that change is a finished edit
  private wordPending = false; // the difill.wordPending context: Esc ends the word

  constructor(
    private client: () => LanguageClient | undefined,
    private setting: () => unknown,
    private log: (message: string) => void,
    icon: vscode.Uri,
    private ghost: GhostText,
  ) {
    this.markerStyle = vscode.window.createTextEditorDecorationType({ gutterIconPath: icon, gutterIconSize: "contain" });
    this.debouncer = new Debouncer(
      (trigger) => this.ask(trigger),
      (answer) => this.show(answer),
      undefined,
      undefined,
      () => this.ghostShown(),
    );
    this.subscriptions.push(
      this.markerStyle,
      vscode.commands.registerCommand("difill.nextEditTab", () => this.tab()),
      vscode.commands.registerCommand("difill.dismissNextEdit", () => this.dismiss()),
      vscode.commands.registerCommand("difill.finishEdit", () => this.finishEdit()),
      vscode.workspace.onDidChangeTextDocument((e) => this.documentChanged(e)),
      vscode.window.onDidChangeActiveTextEditor(() => this.dismiss()),
      vscode.window.onDidChangeTextEditorSelection((e) => this.selectionChanged(e)),
      vscode.window.onDidChangeTextEditorVisibleRanges(() => this.redraw()),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration("difill.nextEdit") && !nextEditEnabled(this.setting())) this.dismiss();
      }),
      vscode.workspace.onDidCloseTextDocument((d) => {
        if (this.shown?.textDocument.uri === d.uri.toString()) this.dismiss();
      }),
    );
  }

  dispose(): void {
    this.debouncer.cancel();
    this.subscriptions.forEach((s) => s.dispose());
  }

  /** The edit shown now, for the tests and the log. */
  get current(): InlineEdit | undefined {
    return this.shown;
  }

  private documentChanged(e: vscode.TextDocumentChangeEvent): void {
    if (e.contentChanges.length === 0) return;
    const uri = e.document.uri.toString();
    if (this.shown?.textDocument.uri === uri) this.hide(); // made for a version that is gone
    const active = vscode.window.activeTextEditor?.document;
    if (active?.uri.toString() !== uri) return;
    // Undo and redo are not edits to repeat: stop asking until the next real edit.
    const reason = e.reason;
    if (reason === vscode.TextDocumentChangeReason.Undo || reason === vscode.TextDocumentChangeReason.Redo) {
      this.debouncer.cancel();
      return;
    }
    // The cursor after the change: at the end of a word, that word may still be typed.
    const last = e.contentChanges[e.contentChanges.length - 1];
    const at = endOfTyped(last.range.start, last.text);
    const line = at.line < e.document.lineCount ? e.document.lineAt(at.line).text : "";
    const wait = waitAfterEdit(line, at, this.applying);
    this.typedAt = { uri, version: e.document.version, ...at };
    this.debouncer.edited(wait);
    this.setWordPending(wait > DEBOUNCE_MS);
  }

  /** A cursor move: redraw the hint; one that leaves the word an ask waits for finishes it. */
  private selectionChanged(e: vscode.TextEditorSelectionChangeEvent): void {
    this.redraw();
    const at = this.typedAt;
    const cursor = e.selections[0]?.active;
    if (!at || !cursor || e.textEditor.document.uri.toString() !== at.uri) return;
    if (cursor.line !== at.line || cursor.character !== at.character) {
      this.typedAt = undefined;
      this.setWordPending(false);
      this.debouncer.finished(AUTOMATIC);
    }
  }

  /** Esc while ghost text is shown or a word may still be typed: the ghost text hidden, the edit
   *  finished, and the next edit asked now. */
  private async finishEdit(): Promise<void> {
    await vscode.commands.executeCommand("editor.action.inlineSuggest.hide");
    this.ghost.hidden();
    this.setWordPending(false);
    this.debouncer.finished(INVOKED);
    this.redraw();
  }

  /** difill's ghost text answered anew: the hint says which key acts now. */
  ghostChanged(): void {
    if (this.shown) this.redraw();
  }

  private ghostShown(): boolean {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return false;
    const cursor = editor.selection.active;
    const uri = editor.document.uri.toString();
    return this.ghost.shownAt({ uri, version: editor.document.version, line: cursor.line, character: cursor.character });
  }

  private setWordPending(pending: boolean): void {
    if (pending === this.wordPending) return;
    this.wordPending = pending;
    void vscode.commands.executeCommand("setContext", "difill.wordPending", pending);
  }

  /** The request, for the active editor at its cursor; none when the feature is off or the
   *  server does not offer it. */
  private ask(trigger: number): Pending<unknown> | undefined {
    this.setWordPending(false);
    const c = this.client();
    const editor = vscode.window.activeTextEditor;
    if (!c?.isRunning() || !editor || !nextEditEnabled(this.setting())) return undefined;
    const experimental = c.initializeResult?.capabilities.experimental as { difill?: { nextEdit?: boolean } } | undefined;
    if (!experimental?.difill?.nextEdit) return undefined;
    const doc = editor.document;
    const source = new vscode.CancellationTokenSource();
    const params = {
      textDocument: { uri: c.code2ProtocolConverter.asUri(doc.uri), version: doc.version },
      position: c.code2ProtocolConverter.asPosition(editor.selection.active),
      context: { triggerKind: trigger },
    };
    const answer = c.sendRequest(METHOD, params, source.token).finally(() => source.dispose());
    return { answer, cancel: () => source.cancel() };
  }

  /** An answer: show its best edit that still fits the document as it is. */
  private show(answer: unknown): void {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return;
    const uri = editor.document.uri.toString();
    const edit = inlineEditsOf(answer).find((e) => applicable(e, uri, editor.document.version));
    if (!edit) return;
    this.shown = edit;
    this.log(`next edit ${JSON.stringify(edit)}`);
    this.redraw();
    void this.setContext();
    void this.client()?.sendNotification(SHOWN, { item: edit });
  }

  /** Tab: jump to the edit, or apply it when the cursor is on it already. */
  private async tab(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const edit = this.shown;
    if (!editor || !edit || editor.document.uri.toString() !== edit.textDocument.uri) {
      await vscode.commands.executeCommand("tab"); // nothing to act on: Tab stays Tab
      return;
    }
    const range = asRange(edit.range);
    if (tabAction(edit, editor.selection.active) === "jump") {
      editor.selection = new vscode.Selection(range.start, range.start);
      editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
      return;
    }
    this.hide();
    if (!applicable(edit, editor.document.uri.toString(), editor.document.version)) {
      // Never an edit on a version it was not made for (a change drops it first; this is the guard).
      void vscode.window.showWarningMessage(
        `difill: the document changed since the next edit was made (version ${edit.textDocument.version}, now ${editor.document.version}); nothing applied.`,
      );
      return;
    }
    this.applying = true;
    let applied: boolean;
    try {
      applied = await editor.edit((b) => b.replace(range, edit.text));
    } finally {
      this.applying = false;
    }
    if (!applied) {
      this.log(`next edit not applied ${JSON.stringify(edit)}`);
      return;
    }
    // The cursor after the new text, as after typing it; the change asks for the edit after it.
    const lines = edit.text.split("\n");
    const end =
      lines.length === 1
        ? range.start.translate(0, edit.text.length)
        : new vscode.Position(range.start.line + lines.length - 1, lines[lines.length - 1].length);
    editor.selection = new vscode.Selection(end, end);
    this.log(`next edit applied ${JSON.stringify(edit)}`);
  }

  /** Esc: drop the edit shown, and stop asking until the next edit. */
  dismiss(): void {
    this.debouncer.cancel();
    this.setWordPending(false);
    this.hide();
  }

  private hide(): void {
    if (!this.shown) return;
    this.shown = undefined;
    this.redraw();
    void this.setContext();
  }

  private redraw(): void {
    if (!this.shown && !this.drawn) return;
    this.drawn = this.shown !== undefined;
    for (const editor of vscode.window.visibleTextEditors) {
      const edit = this.shown;
      const mine = edit !== undefined && editor.document.uri.toString() === edit.textDocument.uri;
      if (!mine) {
        for (const style of [removedStyle, addedStyle, hintStyle, this.markerStyle]) editor.setDecorations(style, []);
        continue;
      }
      const doc = editor.document;
      const lineLength = (n: number) => (n < doc.lineCount ? doc.lineAt(n).text.length : 0);
      const view = diffView(asProposal(edit), lineLength);
      editor.setDecorations(removedStyle, view.removed.map(asRange));
      editor.setDecorations(addedStyle, view.added.map((o) => afterText(o, "gitDecoration.addedResourceForeground", false)));
      const visible = editor.visibleRanges.map((r) => ({ start: r.start.line, end: r.end.line }));
      const where = marker(edit, visible, editor.selection.active.line, this.ghostShown());
      const markAt = new vscode.Range(where.line, 0, where.line, 0);
      editor.setDecorations(this.markerStyle, [{ range: markAt, hoverMessage: where.hint }]);
      const hintAt = new vscode.Range(where.line, lineLength(where.line), where.line, lineLength(where.line));
      editor.setDecorations(hintStyle, [
        afterText({ line: hintAt.start.line, character: hintAt.start.character, text: where.hint }, "editorCodeLens.foreground", true),
      ]);
    }
  }

  private async setContext(): Promise<void> {
    await vscode.commands.executeCommand("setContext", "difill.nextEditShown", this.shown !== undefined);
  }
}
