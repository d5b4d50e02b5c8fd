"""Make a raw middle fit between its prefix and suffix.

These are the rules a fill must satisfy whoever asks for it (the CLI, the language server, eval):
end where the suffix begins (no duplicated closing brackets or lines), be a whole line when the
cursor sits at the start of an existing line, and use the document's line endings.  The language
server adds editor-facing filters of its own on top (server/features/filters.py).
"""

from __future__ import annotations

OPENERS = {")": "(", "]": "[", "}": "{"}
CLOSERS = set(OPENERS)


def unmatched_closers(text: str) -> list[str]:
    """Closing brackets in ``text`` that no opening bracket inside ``text`` matches, in order."""
    stack: list[str] = []
    unmatched: list[str] = []
    for ch in text:
        if ch in "([{":
            stack.append(ch)
        elif ch in CLOSERS:
            if stack and stack[-1] == OPENERS[ch]:
                stack.pop()
            else:
                unmatched.append(ch)
    return unmatched


def unmatched_openers(text: str) -> list[str]:
    """Opening brackets in ``text`` still open at its end, in order."""
    stack: list[str] = []
    for ch in text:
        if ch in "([{":
            stack.append(ch)
        elif ch in CLOSERS and stack and stack[-1] == OPENERS[ch]:
            stack.pop()
    return stack


def trim_suffix_overlap(middle: str, suffix: str) -> str:
    """Drop the end of ``middle`` that the suffix already has.

    * closing brackets: when the middle ends with closers the suffix starts with, and those closers
      match nothing inside the middle, they are the suffix's (``foo(x))`` + ``)`` -> ``foo(x)``);
    * lines: when the middle's last lines repeat the suffix's first lines, they are dropped.
    """
    head = suffix.lstrip(" \t")
    closers = len(head) - len(head.lstrip("".join(CLOSERS)))
    body = middle.rstrip(" \t")
    for k in range(min(closers, len(body)), 0, -1):
        if body.endswith(head[:k]) and len(unmatched_closers(body[:-k])) == len(unmatched_closers(body)) - k:
            middle = body[:-k]
            break
    middle_lines = middle.rstrip("\n").split("\n")
    suffix_lines = [ln.strip() for ln in suffix.split("\n") if ln.strip()][:4]
    for count in range(min(len(middle_lines) - 1, len(suffix_lines)), 0, -1):
        tail = [ln.strip() for ln in middle_lines[-count:]]
        if all(tail) and tail == suffix_lines[:count]:
            middle = "\n".join(middle_lines[:-count]) + "\n"
            break
    return middle


def at_line_start(prefix: str) -> bool:
    return prefix == "" or prefix.endswith("\n")


def fit_middle(middle: str, prefix: str, suffix: str, single_line: bool = False) -> str:
    """Apply the rules above to a middle written in LF text."""
    if single_line and "\n" in middle:
        middle = middle.split("\n", 1)[0]
    middle = trim_suffix_overlap(middle, suffix)
    if at_line_start(prefix) and suffix and not suffix.startswith("\n") and middle.strip():
        # A new line inserted before an existing one must end with its own newline.
        if not middle.endswith("\n"):
            middle += "\n"
    if not middle.strip():
        return ""
    return middle


def uses_crlf(text: str) -> bool:
    return "\r\n" in text


def to_lf(text: str) -> str:
    return text.replace("\r\n", "\n")


def to_document_line_endings(middle: str, crlf: bool) -> str:
    return middle.replace("\n", "\r\n") if crlf else middle
