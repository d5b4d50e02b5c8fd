// Edit proposals (issue 24), the pure part: what the server sends, and what the editor draws for
// it. No `vscode` import, so the unit tests run under plain Node.
import type { Range } from "./actions";

export interface TextEdit {
  range: Range;
  newText: string;
}

/** The answer of difill.editSelection / fillHoles / completeBlock to a client that reviews edits. */
export interface Proposal {
  id: string;
  uri: string;
  version: number;
  range: Range; // the selection it replaces
  newText: string; // the selection's new text
  edits: TextEdit[]; // the smallest edits, all inside `range`
  label?: string; // what the edit is: "difill: add type hints"
  replaces?: string[]; // proposals for the same range that the server dropped for this one
}

/** A difill/preview notification: the canvas at one denoising step (or the last one, `done`). */
export interface Preview {
  token?: string;
  id?: string;
  uri?: string;
  range?: Range;
  text?: string;
  step?: number;
  done?: boolean;
  cancelled?: boolean;
}

/** Text shown after a column of one line (VS Code's `after` decorations are one line each). */
export interface Overlay {
  line: number;
  character: number;
  text: string;
}

/** `text` laid over the lines of `range`: its line i after the end of the range's line i;
 *  lines beyond the range's last one join that line with " ⏎ ". `lineLength(n)` is line n's
 *  length (the overlay sits at the end of the line, or of the range on its last line). */
export function overlays(range: Range, text: string, lineLength: (line: number) => number): Overlay[] {
  const lines = text.replace(/\r\n/g, "\n").replace(/\n$/, "").split("\n");
  const span = range.end.line - range.start.line;
  const out: Overlay[] = [];
  for (let i = 0; i <= span; i++) {
    const line = range.start.line + i;
    const parts = i < span ? [lines[i] ?? ""] : lines.slice(i);
    const shown = parts.join(" ⏎ ");
    if (shown === "" && i >= lines.length) continue;
    const character = i === span ? range.end.character : lineLength(line);
    out.push({ line, character, text: shown });
  }
  return out;
}

/** What the diff of a proposal draws: the ranges it removes (struck through) and its new text
 *  laid over them (in green). An edit that only inserts shows its text at the insertion point. */
export function diffView(
  proposal: Proposal,
  lineLength: (line: number) => number,
): { removed: Range[]; added: Overlay[] } {
  const removed: Range[] = [];
  const added: Overlay[] = [];
  for (const edit of proposal.edits) {
    const r = edit.range;
    if (r.start.line !== r.end.line || r.start.character !== r.end.character) removed.push(r);
    if (edit.newText !== "") added.push(...overlays(r, edit.newText, lineLength));
  }
  return { removed, added };
}

/** `text` with the LSP `edits` applied (columns are UTF-16 code units, as in JavaScript). */
export function applyEdits(text: string, edits: readonly TextEdit[]): string {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === "\n") starts.push(i + 1);
  const offset = (p: { line: number; character: number }) => (starts[p.line] ?? text.length) + p.character;
  const sorted = [...edits].sort((a, b) => offset(b.range.start) - offset(a.range.start));
  let out = text;
  for (const e of sorted) out = out.slice(0, offset(e.range.start)) + e.newText + out.slice(offset(e.range.end));
  return out;
}

const contains = (r: Range, line: number) => r.start.line <= line && line <= r.end.line;

/** The pending proposals of the open documents, by id. */
export class ProposalBook {
  private byId = new Map<string, Proposal>();

  /** Keep `p`; a proposal for the same range of the same document is replaced (the server
   *  drops it too: a second edit of a selection does not stack). Returns the ids replaced. */
  add(p: Proposal): string[] {
    const same = (q: Proposal) => q.uri === p.uri && JSON.stringify(q.range) === JSON.stringify(p.range);
    const replaced = [...this.byId.values()].filter((q) => q.id !== p.id && same(q)).map((q) => q.id);
    for (const id of [...replaced, ...(p.replaces ?? [])]) this.byId.delete(id);
    this.byId.set(p.id, p);
    return replaced;
  }

  remove(id: string): Proposal | undefined {
    const p = this.byId.get(id);
    this.byId.delete(id);
    return p;
  }

  forUri(uri: string): Proposal[] {
    return [...this.byId.values()].filter((p) => p.uri === uri);
  }

  /** The proposal Tab / Esc act on: the one on the cursor's line, else the newest of the document. */
  at(uri: string, line: number): Proposal | undefined {
    const mine = this.forUri(uri);
    return mine.find((p) => contains(p.range, line)) ?? mine[mine.length - 1];
  }

  /** Forget proposals the server has expired: the document closed, or changed inside the range
   *  (a change at `changed` lines; true where it overlaps). Returns the ids dropped. */
  dropTouched(uri: string, changed: Range[]): string[] {
    const dropped: string[] = [];
    for (const p of this.forUri(uri)) {
      if (changed.some((c) => c.start.line <= p.range.end.line && c.end.line >= p.range.start.line)) {
        this.byId.delete(p.id);
        dropped.push(p.id);
      }
    }
    return dropped;
  }

  dropUri(uri: string): void {
    for (const p of this.forUri(uri)) this.byId.delete(p.id);
  }
}

/** The proposal in an edit command's answer, if it is one (old servers answer {applied}). */
export function proposalOf(answer: unknown): Proposal | undefined {
  const p = (answer as { proposal?: Proposal } | null | undefined)?.proposal;
  return p && typeof p.id === "string" && Array.isArray(p.edits) ? p : undefined;
}
