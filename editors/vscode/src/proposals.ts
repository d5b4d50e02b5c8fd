// Edit proposals in the editor (issue 24): the canvas denoising in place while an edit runs,
// then an inline diff with Accept / Reject CodeLens and keys. Only Accept changes the document:
// the server then sends its versioned workspace/applyEdit (one undo step).
// The protocol is in editors/README.md; the pure parts (what to draw) are in proposalView.ts.
import * as vscode from "vscode";
import type { LanguageClient, StaticFeature } from "vscode-languageclient/node";
import { ExecuteCommandRequest } from "vscode-languageclient/node";
import type { Range } from "./actions";
import { diffView, Preview, Overlay, overlays, Proposal, ProposalBook } from "./proposalView";

/** Tells the server at initialize that this client reviews edits. */
export const proposalsCapability: StaticFeature = {
  fillClientCapabilities(capabilities) {
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    capabilities.experimental = { ...experimental, difill: { editProposals: true } };
  },
  initialize() {},
  getState: () => ({ kind: "static" }),
  clear() {},
};

const canvasStyle = vscode.window.createTextEditorDecorationType({
  backgroundColor: new vscode.ThemeColor("diffEditor.unchangedRegionBackground"),
  opacity: "0.45",
});
const canvasTextStyle = vscode.window.createTextEditorDecorationType({});
/** How a diff's removed text looks; next edits (nextEdits.ts) draw theirs the same way. */
export const REMOVED_TEXT: vscode.DecorationRenderOptions = {
  backgroundColor: new vscode.ThemeColor("diffEditor.removedTextBackground"),
  textDecoration: "line-through",
};
const removedStyle = vscode.window.createTextEditorDecorationType(REMOVED_TEXT);
const addedStyle = vscode.window.createTextEditorDecorationType({});

export const afterText = (o: Overlay, color: string, italic: boolean): vscode.DecorationOptions => ({
  range: new vscode.Range(o.line, o.character, o.line, o.character),
  renderOptions: {
    after: {
      contentText: `  ${o.text}`,
      color: new vscode.ThemeColor(color),
      backgroundColor: italic ? undefined : new vscode.ThemeColor("diffEditor.insertedTextBackground"),
      fontStyle: italic ? "italic" : "normal",
    },
  },
});

export const asRange = (r: Range) => new vscode.Range(r.start.line, r.start.character, r.end.line, r.end.character);

export class Proposals implements vscode.CodeLensProvider, vscode.Disposable {
  private book = new ProposalBook();
  private previews = new Map<string, Preview>(); // running edits by id: their latest canvas
  private lensChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensChanged.event;
  private subscriptions: vscode.Disposable[] = [];

  constructor(
    private client: () => LanguageClient | undefined,
    private log: (message: string) => void,
  ) {
    this.subscriptions.push(
      vscode.languages.registerCodeLensProvider({ scheme: "file" }, this),
      vscode.languages.registerCodeLensProvider({ scheme: "untitled" }, this),
      vscode.commands.registerCommand("difill.acceptProposal", (id?: string) => this.settle("accept", id)),
      vscode.commands.registerCommand("difill.rejectProposal", (id?: string) => this.settle("reject", id)),
      vscode.window.onDidChangeVisibleTextEditors(() => this.redraw()),
      vscode.workspace.onDidChangeTextDocument((e) => this.documentChanged(e)),
      vscode.workspace.onDidCloseTextDocument((d) => this.forget(d.uri.toString())),
    );
  }

  dispose(): void {
    this.subscriptions.forEach((s) => s.dispose());
    this.lensChanged.dispose();
  }

  /** difill/preview: the canvas of a running edit, or its end. */
  onPreview(preview: Preview): void {
    if (!preview.id || !preview.uri || !preview.range) return; // a client without proposals' preview
    if (preview.done) this.previews.delete(preview.id);
    else this.previews.set(preview.id, preview);
    void this.setContext();
    this.redraw();
  }

  /** An edit command's answer: show the proposal for review. */
  show(proposal: Proposal): void {
    const { id, uri, version, range, newText } = proposal;
    this.log(`proposal ${JSON.stringify({ id, uri, version, range, newText })}`);
    this.previews.delete(proposal.id);
    this.book.add(proposal);
    void this.setContext();
    this.redraw();
    this.lensChanged.fire();
    // A proposal drawn outside the view would go unseen: scroll to it.
    const editor = vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === uri);
    const where = asRange(range);
    if (editor && !editor.visibleRanges.some((v) => v.contains(where))) {
      editor.revealRange(where, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    }
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    return this.book.forUri(document.uri.toString()).flatMap((p) => {
      const at = new vscode.Range(p.range.start.line, 0, p.range.start.line, 0);
      return [
        // What the edit is ("difill: add type hints"), then what to do with it.
        new vscode.CodeLens(at, { title: p.label ?? "difill: proposed edit", command: "" }),
        new vscode.CodeLens(at, { title: "$(check) Accept (Tab)", command: "difill.acceptProposal", arguments: [p.id] }),
        new vscode.CodeLens(at, { title: "$(close) Reject (Esc)", command: "difill.rejectProposal", arguments: [p.id] }),
      ];
    });
  }

  /** Accept or reject `id`, or the proposal at the cursor; Esc on a running edit stops it. */
  private async settle(how: "accept" | "reject", id?: string): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const uri = editor?.document.uri.toString();
    if (!id && how === "reject" && uri) id = [...this.previews.values()].find((d) => d.uri === uri)?.id;
    if (!id && editor && uri) id = this.book.at(uri, editor.selection.active.line)?.id;
    if (!id) return;
    this.book.remove(id);
    this.previews.delete(id);
    this.redraw();
    this.lensChanged.fire();
    void this.setContext();
    const command = how === "accept" ? "difill.acceptEdit" : "difill.rejectEdit";
    try {
      const answer = await this.client()?.sendRequest(ExecuteCommandRequest.type, { command, arguments: [{ id }] });
      this.log(`${command} ${id}: ${JSON.stringify(answer)}`);
    } catch (err) {
      this.log(`${command} ${id} refused: ${err instanceof Error ? err.message : String(err)}`);
      // A document that moved since the proposal was made is refused (ContentModified).
      void vscode.window.showWarningMessage(`difill: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private documentChanged(e: vscode.TextDocumentChangeEvent): void {
    if (e.contentChanges.length === 0) return;
    const uri = e.document.uri.toString();
    // The server expires a proposal whose range the change touches; the others stay, and an
    // Accept on them is refused (the document is no longer at their version).
    const touched = this.book.dropTouched(uri, e.contentChanges.map((c) => ({
      start: { line: c.range.start.line, character: c.range.start.character },
      end: { line: c.range.end.line, character: c.range.end.character },
    })));
    for (const id of touched) {
      // The server has expired it already, unless the change only shared a line with its range.
      void this.client()
        ?.sendRequest(ExecuteCommandRequest.type, { command: "difill.rejectEdit", arguments: [{ id }] })
        .catch(() => undefined);
    }
    if (touched.length) {
      this.redraw();
      this.lensChanged.fire();
      void this.setContext();
    }
  }

  private forget(uri: string): void {
    this.book.dropUri(uri);
    for (const [id, d] of this.previews) if (d.uri === uri) this.previews.delete(id);
    void this.setContext();
    this.lensChanged.fire();
  }

  private redraw(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      const uri = editor.document.uri.toString();
      const lineLength = (n: number) => (n < editor.document.lineCount ? editor.document.lineAt(n).text.length : 0);
      const canvas: vscode.Range[] = [];
      const canvasText: vscode.DecorationOptions[] = [];
      for (const d of this.previews.values()) {
        if (d.uri !== uri || !d.range) continue;
        canvas.push(asRange(d.range));
        canvasText.push(...overlays(d.range, d.text ?? "", lineLength).map((o) => afterText(o, "editorGhostText.foreground", true)));
      }
      const removed: vscode.Range[] = [];
      const added: vscode.DecorationOptions[] = [];
      for (const p of this.book.forUri(uri)) {
        const view = diffView(p, lineLength);
        removed.push(...view.removed.map(asRange));
        added.push(...view.added.map((o) => afterText(o, "gitDecoration.addedResourceForeground", false)));
      }
      editor.setDecorations(canvasStyle, canvas);
      editor.setDecorations(canvasTextStyle, canvasText);
      editor.setDecorations(removedStyle, removed);
      editor.setDecorations(addedStyle, added);
    }
  }

  private async setContext(): Promise<void> {
    const uri = vscode.window.activeTextEditor?.document.uri.toString();
    const pending = uri !== undefined && this.book.forUri(uri).length > 0;
    const running = uri !== undefined && [...this.previews.values()].some((d) => d.uri === uri);
    await vscode.commands.executeCommand("setContext", "difill.proposalPending", pending);
    await vscode.commands.executeCommand("setContext", "difill.editRunning", running);
  }
}
