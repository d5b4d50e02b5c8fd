"""An edit's instruction written into the prefix as a comment: the only kind of prompt a code
infilling model knows.  Torch-free, so that the local engine and the remote vLLM canvas share it."""

from __future__ import annotations

from difill.text.languages import is_prose, line_comment


def with_instruction_comment(prefix: str, selection: str, instruction: str, language: str | None) -> str:
    """The prefix with the instruction as a comment on its own line just above the selection."""
    # A language difill cannot name gets "//", the most common marker; no language at all, "#".
    # Prose (Markdown) has no line comment, and "#" there is a heading: an HTML comment.
    marker = line_comment(language) or ("<!--" if is_prose(language) else "//" if language else "#")
    line_start = prefix.rfind("\n") + 1
    current = prefix[line_start:] if prefix[line_start:].strip() else prefix[line_start:] + selection
    indent = current[: len(current) - len(current.lstrip(" \t"))]
    closing = " -->" if marker == "<!--" else ""
    comment = f"{indent}{marker} {' '.join(instruction.split())}{closing}\n"
    return prefix[:line_start] + comment + prefix[line_start:]
