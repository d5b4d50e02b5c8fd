// Helpers for the commands that go through LSP (pure: plain LSP JSON in, plain JSON out).

export interface Position {
  line: number;
  character: number;
}
export interface Range {
  start: Position;
  end: Position;
}

/** The argument of the server's difill.editSelection / difill.fillHoles commands. */
export interface SelectionArgs {
  uri: string;
  range: Range;
  version: number;
  instruction?: string;
  strength?: number;
}

export interface CodeActionLike {
  title: string;
  kind?: string;
  command?: { command: string; arguments?: unknown[] };
}

/** The server's code action whose title starts with `title` (case-insensitive) and whose
 *  kind is `refactor.rewrite` or below it. */
export function findAction<T extends CodeActionLike>(actions: readonly T[] | null | undefined, title: string): T | undefined {
  const want = title.toLowerCase();
  return (actions ?? []).find(
    (a) =>
      a.title.toLowerCase().startsWith(want) &&
      (a.kind === undefined || a.kind === "refactor.rewrite" || a.kind.startsWith("refactor.rewrite.")),
  );
}

/** An empty selection means the whole line the cursor is on; a selection that ends at the
 *  start of a line (whole lines selected with Shift+Down) stops at the end of the line above,
 *  so the edit does not swallow the newline. `lineLength(n)` is line n's length. */
export function effectiveRange(sel: Range, lineLength: (line: number) => number): Range {
  const empty = sel.start.line === sel.end.line && sel.start.character === sel.end.character;
  if (empty) {
    const line = sel.start.line;
    return { start: { line, character: 0 }, end: { line, character: lineLength(line) } };
  }
  if (sel.end.character === 0 && sel.end.line > sel.start.line) {
    const line = sel.end.line - 1;
    return { start: sel.start, end: { line, character: lineLength(line) } };
  }
  return sel;
}

/** The code action "Edit selection with instruction..." carries difill.editSelection without an
 *  instruction, as "Rewrite selection" does: only the title tells them apart. True for the
 *  one the client must ask an instruction for. */
export function asksInstruction(action: CodeActionLike): boolean {
  const args = action.command?.arguments?.[0] as Partial<SelectionArgs> | undefined;
  return (
    action.command?.command === "difill.editSelection" &&
    action.title.toLowerCase().includes("instruction") &&
    (typeof args?.instruction !== "string" || args.instruction.trim() === "")
  );
}
