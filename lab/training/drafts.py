"""Drafts for draft-seeded training canvases: what the engine's seeded rows start from.

At inference a seeded row's hole starts from a retrieved draft (``server/context/drafts.py``
``find_drafts``, cut to the request's lines by ``server/draft_policy.py`` ``shaped_drafts``) instead of
noise, and the model must keep the draft's right tokens and mend its wrong ones.  A training
draft is, for one example:
* the exact true middle (``EXACT_SHARE``): a right draft must survive untouched;
* else prompt lookup run on the training document itself (its prefix, then its suffix, as the
  server searches the text before and after the cursor): the real distribution of drafts;
* else, when lookup finds nothing, the true middle spoiled: spans replaced by random tokens or
  by tokens from elsewhere in the file, sometimes cut short or run on into the suffix.
The loss is the true middle at every hole slot, whatever the draft held (see ``train.py``).
"""

from __future__ import annotations

import random

from transformers import PreTrainedTokenizerBase

from difill.engine.tokens import draft_tokens
from difill.engine.vocab import TokenIds
from difill.server.context.drafts import find_drafts
from lab.training.examples import InfillExample

EXACT_SHARE = 0.15  # drafts that are the true middle itself
MAX_SPOILED_SPANS = 2  # a draft stays mostly right: a plausible but imperfect continuation
MAX_SPAN_TOKENS = 8


def training_draft(
    ex: InfillExample,
    middle: list[int],
    donor: list[int],
    tok: PreTrainedTokenizerBase,
    ids: TokenIds,
    rng: random.Random,
) -> list[int]:
    """The draft tokens a one-hole example's seeded row starts from.

    ``middle`` is the true middle's tokens; ``donor`` tokens from elsewhere in the file (the
    prefix window and the suffix) that spoiled spans and run-on drafts borrow.
    """
    if rng.random() < EXACT_SHARE:
        return list(middle)
    retrieved = retrieved_draft(ex, rng)
    if retrieved is not None:
        tokens = draft_tokens(tok, ids, retrieved)
        if tokens:
            return tokens
    return spoiled_middle(middle, donor, ids, rng)


def retrieved_draft(ex: InfillExample, rng: random.Random) -> str | None:
    """One of the drafts prompt lookup finds for the example's cursor, cut as the server cuts it.

    The server searches the document before the cursor, then after it (``server/draft_policy.py`` ``drafts_at``);
    here the text after the cursor is the suffix, as the middle is not written yet.  It cuts a
    draft to the request's lines (``shaped_drafts``); the request's shape is the middle's here.
    """
    found = find_drafts(ex.prefix, [("current", ex.suffix)], max_drafts=3)
    lines = ex.middles[0].rstrip("\n").count("\n") + 1
    shaped = {"\n".join(d.text.split("\n")[:lines]).rstrip() for d in found}
    shaped = sorted(t for t in shaped if t.strip())  # sorted: the same draft for the same rng
    return rng.choice(shaped) if shaped else None


def spoiled_middle(middle: list[int], donor: list[int], ids: TokenIds, rng: random.Random) -> list[int]:
    """The true middle with 1-2 spans replaced, sometimes cut short or run on into ``donor``."""
    banned = set(ids.banned_in_hole) | set(ids.filler)
    draft = list(middle)
    for _ in range(rng.randint(1, MAX_SPOILED_SPANS)):
        if not draft:
            break
        at = rng.randrange(len(draft))
        length = rng.randint(1, min(MAX_SPAN_TOKENS, max(1, len(draft) // 4)))
        if donor and rng.random() < 0.5:  # a span from elsewhere in the file, of its own length (a shift)
            start = rng.randrange(len(donor))
            replacement = donor[start : start + rng.randint(1, MAX_SPAN_TOKENS)]
        else:
            replacement = [_random_token(ids.vocab_size, banned, rng) for _ in range(length)]
        draft[at : at + length] = replacement
    roll = rng.random()
    if roll < 0.2 and len(draft) > 1:  # a draft that stops too early
        draft = draft[: rng.randrange(1, len(draft))]
    elif roll < 0.4 and donor:  # a draft that runs on past the middle
        start = rng.randrange(len(donor))
        draft += donor[start : start + rng.randint(1, 16)]
    return [t for t in draft if t not in banned]


def _random_token(vocab_size: int, banned: set[int], rng: random.Random) -> int:
    while True:
        token = rng.randrange(vocab_size)
        if token not in banned:
            return token
