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
/** InlineCompletionTriggerKind.Invoked: asked because the user ended the edit (Esc). */
export const INVOKED = 1;
/** A word at the cursor may still be growing (`req` typed over `requirement`): then the ask waits
 *  this long, unless the user leaves the word or presses Esc first (issue 63). Over the server's
 *  750 ms: it answers nothing to an ask at a word typed less than that before
 *  (server/features/next_edit/typing.py), so the ask after this pause is answered. */
export const FINISHED_PAUSE_MS = 1000;

/** The cursor is right after a word character: the word there may still be typed. */
export function atWordEnd(lineText: string, character: number): boolean {
  return /[\p{L}\p{N}_]$/u.test(lineText.slice(0, character));
}

/** Where the cursor is after a change that put `text` at `start` (a keystroke, a paste). */
export function endOfTyped(start: Position, text: string): Position {
  const lines = text.split("\n");
  if (lines.length === 1) return { line: start.line, character: start.character + text.length };
  return { line: start.line + lines.length - 1, character: lines[lines.length - 1].length };
}

/** How long to wait after an edit before asking: the debounce, or the pause when the cursor ends
 *  a word that may still be typed. An edit the client applied itself (Tab on a next edit) is
 *  finished: the short debounce. */
export function waitAfterEdit(lineText: string, cursor: Position, applied: boolean): number {
  return !applied && atWordEnd(lineText, cursor.character) ? FINISHED_PAUSE_MS : DEBOUNCE_MS;
}

/** Where ghost text was last answered: the document, its version and the cursor. */
export interface GhostAt {
  uri: string;
  version: number;
  line: number;
  character: number;
}

/** Whether difill's ghost text is on screen, as the client can tell: its last inline completion
 *  answered items for this version of the document at this cursor, and Esc has not hidden it
 *  since (a keystroke changes the version, a cursor move the position; either hides it). */
export class GhostText {
  private at: GhostAt | undefined;

  answered(at: GhostAt, items: number): void {
    this.at = items > 0 ? at : undefined;
  }

  hidden(): void {
    this.at = undefined;
  }

  shownAt(now: GhostAt): boolean {
    const at = this.at;
    return at !== undefined && at.uri === now.uri && at.version === now.version && at.line === now.line && at.character === now.character;
  }
}

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
  ghost = false,
): { line: number; hint: string } {
  const line = edit.range.start.line;
  if (ghost) {
    // Tab takes the ghost text first (the keybinding yields to it): the hint names the key that acts.
    return { line: cursorLine, hint: `difill: next edit at line ${line + 1} (Tab takes the ghost text; Esc hides it)` };
  }
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
 *  and cancels a request already sent, whose answer is then never shown. While `blocked` (ghost
 *  text on screen) it does not ask: the ask waits for `finished` (Esc, the word left) or the next
 *  edit, so a next edit and ghost text never compete for Tab (issue 63). */
export class Debouncer<T> {
  private timer: unknown;
  private pending: Pending<T> | undefined;
  private deferred = false; // the pause ended while ghost text was shown: asked when it goes
  private generation = 0;

  constructor(
    private ask: (trigger: number) => Pending<T> | undefined,
    private show: (answer: T) => void,
    private delayMs = DEBOUNCE_MS,
    private timers: Timers = realTimers,
    private blocked: () => boolean = () => false,
  ) {}

  /** The document was edited: cancel what is waiting or running, and ask again after the pause
   *  (`delayMs`: longer when a word may still be typed, waitAfterEdit). */
  edited(delayMs = this.delayMs): void {
    this.cancel();
    const generation = this.generation;
    this.timer = this.timers.set(() => {
      this.timer = undefined;
      if (generation !== this.generation) return;
      if (this.blocked()) this.deferred = true;
      else this.start(generation, AUTOMATIC);
    }, delayMs);
  }

  /** The edit is finished (Esc: `INVOKED`; the cursor left the word: `AUTOMATIC`): an ask that
   *  waits (for the pause, or for ghost text to go) is made now; nothing else is asked. */
  finished(trigger: number): void {
    if (this.timer === undefined && !this.deferred) return;
    this.cancel();
    if (!this.blocked()) this.start(this.generation, trigger);
    else this.deferred = true;
  }

  /** Stop waiting and cancel the request in flight (the user typed, or dismissed). */
  cancel(): void {
    this.generation += 1;
    if (this.timer !== undefined) this.timers.clear(this.timer);
    this.timer = undefined;
    this.deferred = false;
    this.pending?.cancel();
    this.pending = undefined;
  }

  get waiting(): boolean {
    return this.timer !== undefined || this.pending !== undefined || this.deferred;
  }

  private start(generation: number, trigger: number): void {
    const pending = this.ask(trigger);
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
