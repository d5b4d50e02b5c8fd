"""How likely the model finds each of a few names at the cursor: one canvas row, one pass.

Generation from a small model is unreliable where scoring is not: asked for the name after
``defaults.``, it may spell a name no module defines, yet among the names the module does define
it can still tell which one its context makes likely.  The workspace knows the candidates
(server/context/symbols.py); the model only orders them (server/suggestion_path.py ``ranked_by_model``).

The canvas is the one the sampler's first pass reads: the prefix in the KV cache, a hole of
noise, the suffix clamped after it.  That pass gives every hole slot a distribution, and a name
of tokens t1..tk scores

    log P_1(t1) + ... + log P_k(tk) + log P_k+1(a token that ends the word)

the word end keeping ``LEVEL`` from winning over ``LEVEL_NAME`` by being its prefix.  These are
the first pass's per-slot marginals, not the chain of conditionals (one row per token of every
name, which a masked-diffusion model could also give): measured on the tuning packages, the
chain named one case more in 180 and cost a row per token (docs/drafts.md "The model's score").
A name's partial word typed before the cursor (``get_val|``) is scored as part of the name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from difill.engine.canvas import Canvas, build_canvas, used_length
from difill.engine.slot_rules import logsumexp
from difill.engine.vocab import TokenIds

MAX_NAME_TOKENS = 8  # a longer name is scored on its first 8 tokens (and no word end)
PARTIAL_WORD = re.compile(r"[A-Za-z0-9_]+$")
WORD_CHAR = re.compile(r"[A-Za-z0-9_]")


def split_partial_word(prefix: str) -> tuple[str, str]:
    """``prefix`` without the identifier characters it ends with, and those characters."""
    match = PARTIAL_WORD.search(prefix)
    return (prefix[: match.start()], match.group()) if match else (prefix, "")


def names_canvas(
    names_tokens: Sequence[list[int]], suffix_ids: list[int], suffix_complete: bool, ids: TokenIds
) -> Canvas:
    """One row: a hole with room for the longest name and its word end, then the suffix clamped."""
    hole = max(len(tokens) for tokens in names_tokens) + 1
    segments = [hole, suffix_ids]
    return build_canvas(segments, used_length(segments, suffix_complete), ids, suffix_complete)


def word_continuing(token_texts: Sequence[str]) -> np.ndarray:
    """(V,) True for tokens whose text starts with an identifier character: they continue a word."""
    return np.array([bool(WORD_CHAR.match(text)) for text in token_texts], dtype=bool)


def name_scores(
    logp: np.ndarray, names_tokens: Sequence[list[int]], continuing: np.ndarray
) -> list[float]:
    """logp (H, V) log-probs of the hole's slots -> each name's score (the module docstring)."""
    ends = logsumexp(np.where(continuing, -np.inf, logp))  # (H,)
    scores = []
    for tokens in names_tokens:
        score = logp[np.arange(len(tokens)), tokens].sum()
        if len(tokens) < MAX_NAME_TOKENS:  # a cut name's end is not where its word ends
            score = score + ends[len(tokens)]
        scores.append(float(score))
    return scores
