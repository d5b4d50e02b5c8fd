"""Text <-> token windows, shared by the engine and the trainer so both cut context the same way."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from difill.engine.vocab import TokenIds
from difill.text.context import CHARS_PER_TOKEN_BOUND

if TYPE_CHECKING:
    from difill.engine.vocab import Tokenizer

PREFIX_DROP_CHUNK = 64  # drop whole chunks from the left so the kept window is stable while typing


def encode(tok: Tokenizer, text: str) -> list[int]:
    """Tokenise text literally: special-token strings in a user's file stay plain text."""
    if not text:
        return []
    return tok(text, add_special_tokens=False, split_special_tokens=True)["input_ids"]


def encode_prefix_window(
    tok: Tokenizer, ids: TokenIds, prefix: str, budget: int, block: Sequence[int] = ()
) -> list[int]:
    """``<bos>``, the ``block`` tokens, then the last tokens of the prefix: ``budget`` in all.

    ``<bos>`` comes first whether or not the window reaches the file start: Gemma models expect it
    at position 0 and degrade without it.  The window starts at a line start and is cut from the
    left in whole chunks, so that while the user types at the end the kept tokens do not shift
    and the prefix cache can be reused.  ``block``: the context block's tokens as ``block_tokens``
    gives them (at most half the budget).
    """
    window_chars = budget * CHARS_PER_TOKEN_BOUND
    if len(prefix) > window_chars:
        start = len(prefix) - window_chars
        newline = prefix.find("\n", start)
        start = newline + 1 if 0 <= newline < len(prefix) - 1 else start
        prefix = prefix[start:]
    head = ([ids.bos] if ids.bos is not None else []) + list(block)
    tokens = encode(tok, prefix)
    room = max(0, budget - len(head))
    if len(tokens) > room:
        excess = len(tokens) - room
        chunk = max(1, min(PREFIX_DROP_CHUNK, budget // 4))
        drop = -(-excess // chunk) * chunk
        tokens = tokens[drop:]
    return head + tokens


def block_tokens(tok: Tokenizer, block: str, budget: int) -> list[int]:
    """The tokens of a context block (FillOptions.context_block: text from other files) read
    before the prefix window, kept whole or not at all: none when they would take more than half
    of a ``budget``-token prefix (the code before the cursor matters more)."""
    tokens = encode(tok, block)
    return tokens if len(tokens) <= budget // 2 else []


def encode_suffix_window(tok: Tokenizer, suffix: str, budget: int) -> tuple[list[int], bool]:
    """The first <= ``budget`` tokens of the suffix, and whether they hold the whole suffix."""
    if budget <= 0:
        return [], not suffix
    window = suffix[: budget * CHARS_PER_TOKEN_BOUND]
    tokens = encode(tok, window)
    complete = len(window) == len(suffix) and len(tokens) <= budget
    return tokens[:budget], complete


def draft_tokens(tok: Tokenizer, ids: TokenIds, draft: str) -> list[int]:
    """A draft's tokens, up to the first one a hole may never hold (a special token or the filler).

    The engine seeds canvas rows with these and the trainer builds its draft-seeded canvases with
    them, so both cut a draft the same way.
    """
    tokens = encode(tok, draft)
    banned = set(ids.banned_in_hole) | set(ids.filler)
    cut = next((i for i, token in enumerate(tokens) if token in banned), len(tokens))
    return tokens[:cut]
