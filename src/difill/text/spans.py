"""Where two versions of a text differ, and how a replacement keeps its edges: shared by the
selection edits and the next edits, which import nothing from each other."""

from __future__ import annotations

from difill.text.characters import common_prefix


def changed_span(old: str, new: str, leftmost: bool = False) -> tuple[int, int, int]:
    """``(start, old_end, new_end)``: ``old[start:old_end]`` became ``new[start:new_end]``, the
    smallest such span (common head and tail left out).  In repeated text it could sit in several
    places: the rightmost by default, the leftmost with ``leftmost``."""
    if leftmost:
        tail = common_prefix(old[::-1], new[::-1])
        head = common_prefix(old[: len(old) - tail], new[: len(new) - tail])
    else:
        head = common_prefix(old, new)
        tail = common_prefix(old[head:][::-1], new[head:][::-1])
    return head, len(old) - tail, len(new) - tail


def keep_edges(selection: str, new: str) -> str:
    """Keep the selection's leading indentation and its final line ending: an edit that changes
    what is selected should not pull the next line up or unindent the first one."""
    lead = selection[: len(selection) - len(selection.lstrip(" \t"))]
    if lead and not new[:1].isspace():
        new = lead + new
    for ending in ("\r\n", "\n", "\r"):
        if selection.endswith(ending) and not new.endswith(("\n", "\r")):
            return new + ending
    return new
