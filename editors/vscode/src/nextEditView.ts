// Next-edit suggestions (issue 35), the pure part: what the server answers to
// textDocument/copilotInlineEdit, what Tab does with it, where its marker goes, and the debounce
// that asks after an edit and cancels when the user types again. No `vscode` import, so the
// unit tests run under plain Node; nextEdits.ts draws it.
import type { Position, Range } from "./actions";
import type { Proposal } from "./proposalView";

export const METHOD = "textDocument/copilotInlineEdit";
export const SHOWN = "textDocument/didShowInlineEdit";
/** Quiet time after an edit before asking: drafts answer in a few ms, so this is about not
 *  asking on every keystroke of a word being typed, not about the server's load. */
export const DEBOUNCE_MS = 250;
/** LSP InlineCompletionTriggerKind.Automatic: asked because the user edited, not by a key. */
export const AUTOMATIC = 2;

/** One edit of the answer: replace `range` of the document at `textDocument.version` by `text`. */
export interface InlineEdit {
  text: string;
  range: Range;
  textDocument: { uri: string; version: number };
  command?: unknown;
}

const isPosition = (p: unknown): p is Position =>
  typeof p === "object" && p !== null && Number.isInteger((p as Position).line) && Number.isInteger((p as Position).character);

/** The edits of an answer, best first; anything malformed is left out (an old server, a bug). */
export function inlineEditsOf(answer: unknown): InlineEdit[] {
  const edits = (answer as { edits?: unknown } | null | undefined)?.edits;
  if (!Array.isArray(edits)) return [];
  return edits.filter((e): e is InlineEdit => {
    const doc = e?.textDocument;
    return (
      typeof e?.text === "string" &&
      isPosition(e?.range?.start) &&
      isPosition(e?.range?.end) &&
      typeof doc?.uri === "string" &&
      Number.isInteger(doc?.version)
    );
  });
}

/** The `nextEdit` setting: `off` turns the feature off; `on` (model edits) and `drafts` both ask. */
export function nextEditEnabled(setting: unknown): boolean {
  return setting !== "off";
}

/** An edit may be applied only to the document and version it was computed for. */
export function applicable(edit: InlineEdit, uri: string, version: number): boolean {
  return edit.textDocument.uri === uri && edit.textDocument.version === version;
}

/** The next edit as a proposal, so the proposals' inline diff (diffView) draws it: the range
 *  struck through and the new text after it. */
export function asProposal(edit: InlineEdit): Proposal {
  return {
    id: "next-edit",
    uri: edit.textDocument.uri,
    version: edit.textDocument.version,
    range: edit.range,
    newText: edit.text,
    edits: [{ range: edit.range, newText: edit.text }],
    label: "difill: next edit",
  };
}

/** What Tab does: jump to the edit when the cursor is not on its lines yet, else accept it. */
export function tabAction(edit: InlineEdit, cursor: Position): "jump" | "accept" {
  const onIt = edit.range.start.line <= cursor.line && cursor.line <= edit.range.end.line;
  return onIt ? "accept" : "jump";
}

/** Where the gutter marker goes, and what its hint says (what Tab does next): on the edit's
 *  first line when that line is on screen, else on the cursor's line, pointing at the edit. */
export function marker(
  edit: InlineEdit,
  visible: readonly { start: number; end: number }[],
  cursorLine: number,
): { line: number; hint: string } {
  const line = edit.range.start.line;
  if (visible.some((v) => v.start <= line && line <= v.end)) {
    const next = tabAction(edit, { line: cursorLine, character: 0 }) === "accept" ? "Tab accepts" : "Tab jumps, Tab again accepts";
    return { line, hint: `difill: next edit (${next}, Esc dismisses)` };
  }
  const where = line < cursorLine ? "above" : "below";
  return { line: cursorLine, hint: `difill: next edit at line ${line + 1}, ${where} (Tab jumps to it, Esc dismisses)` };
}

/** A request in flight and the way to cancel it ($/cancelRequest through its token). */
export interface Pending<T> {
  answer: Promise<T>;
  cancel(): void;
}

export interface Timers {
  set(run: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const realTimers: Timers = {
  set: (run, ms) => setTimeout(run, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Asks after an edit, once the user paused for `delayMs`; a new edit meanwhile restarts the wait
 *  and cancels a request already sent, whose answer is then never shown. */
export class Debouncer<T> {
  private timer: unknown;
  private pending: Pending<T> | undefined;
  private generation = 0;

  constructor(
    private ask: () => Pending<T> | undefined,
    private show: (answer: T) => void,
    private delayMs = DEBOUNCE_MS,
    private timers: Timers = realTimers,
  ) {}

  /** The document was edited: cancel what is waiting or running, and ask again after the pause. */
  edited(): void {
    this.cancel();
    const generation = this.generation;
    this.timer = this.timers.set(() => {
      this.timer = undefined;
      if (generation === this.generation) this.start(generation);
    }, this.delayMs);
  }

  /** Stop waiting and cancel the request in flight (the user typed, or dismissed). */
  cancel(): void {
    this.generation += 1;
    if (this.timer !== undefined) this.timers.clear(this.timer);
    this.timer = undefined;
    this.pending?.cancel();
    this.pending = undefined;
  }

  get waiting(): boolean {
    return this.timer !== undefined || this.pending !== undefined;
  }

  private start(generation: number): void {
    const pending = this.ask();
    if (!pending) return;
    this.pending = pending;
    pending.answer.then(
      (answer) => {
        if (this.pending === pending) this.pending = undefined;
        if (generation === this.generation) this.show(answer);
      },
      () => {
        if (this.pending === pending) this.pending = undefined; // cancelled, or ContentModified
      },
    );
  }
}
