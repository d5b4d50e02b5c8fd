"""Snippets in the prompt: a block of comments naming each snippet's path, read before the prefix
(the engine puts it after ``<bos>``: FillOptions.context_block, engine/tokens.py).

The block is ordered by path and line, never by score, and its snippets are chosen from the
text around the cursor without the cursor's own line (similarity.query_text): while the user
types a line, the block stays byte-identical and only the prefix after it grows, so the model's
prefix cache keeps hitting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from difill.server.context.found import Snippet
from difill.text.languages import line_comment


def approximate_tokens(text: str) -> int:
    """A token count without the tokenizer: code averages about 3.5 characters a token."""
    return (len(text) * 2 + 6) // 7


def snippet_block(
    snippets: Sequence[Snippet],
    language_id: str,
    budget_tokens: int,
    count_tokens: Callable[[str], int] = approximate_tokens,
) -> str:
    """The comment block for ``snippets`` (in priority order) within ``budget_tokens``; empty
    when the language has no line comment, the budget is 0 or nothing fits.

    Snippets are taken in priority order while they fit (a snippet that does not fit whole is
    cut to the lines that do, and nothing after it is taken; one that overlaps lines of the same
    file already taken is passed over); the chosen ones are then written
    in (path, line) order, each as ``<comment> Path: <path>`` and its lines commented.  Key-shaped
    text is redacted where the block leaves for a model (policy.to_model), with the drafts."""
    marker = line_comment(language_id)
    if marker is None or budget_tokens <= 0:
        return ""
    chosen: list[tuple[str, int, str, str]] = []
    spans: list[tuple[str, int, int]] = []  # (path, first line, last line) of what is taken
    used = 0
    for snippet in snippets:
        first, last = snippet.start_line, snippet.start_line + snippet.text.count("\n")
        if any(path == snippet.path and first <= end and start <= last for path, start, end in spans):
            continue  # lines of a file already in the block (a definition inside a similar window)
        header = f"{marker} Path: {_printable(snippet.path)}\n"
        lines = [f"{marker} {line}".rstrip() + "\n" for line in snippet.text.split("\n")]
        cost = count_tokens(header)
        taken = []
        for line in lines:
            line_cost = count_tokens(line)
            if used + cost + line_cost > budget_tokens:
                break
            taken.append(line)
            cost += line_cost
        if taken:
            chosen.append((snippet.path, snippet.start_line, snippet.kind, header + "".join(taken)))
            spans.append((snippet.path, first, last))
            used += cost
        if len(taken) < len(lines):
            break
    chosen.sort()  # by path, line, kind, then text: never by score or by arrival
    return "".join(text for *_, text in chosen)


def _printable(path: str) -> str:
    """A path on one line: a newline in a file name would end the comment."""
    return "".join(ch if ch.isprintable() else "?" for ch in path)
