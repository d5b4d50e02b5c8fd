"""Names scored on a vLLM server: the remote ``score_names`` (engine/api.py ``NameScorer``).

The in-process engines score each undecided symbol candidate with one pass over a canvas of noise
(engine/name_scores.py).  vLLM 0.32 and later give the same read in one request: a seeded canvas
(the hole of noise, the suffix pinned) with ``diffusion_read_only``, ``diffusion_max_steps`` 1 and
``diffusion_constrained`` over ``logprob_token_ids``.  The release then reports, at every canvas
position, the log-probability of each asked id renormalised over the asked set
(diffusion_gemma.py; the first step has no self-conditioning input yet, so the ratios between the
asked ids are the full vocabulary's).

What is asked: every candidate's first token, read at the hole's first slot.  Where candidates
share a first token (``get_value`` and ``get_values`` may), their next tokens are asked too, at
the next slot, and split the shared token's probability between them in proportion:

    score = log P_0(t0) + sum over the slots where the name still ties of log(P_j(tj) / sum P_j(t))

So candidates with different first tokens compare on their first token alone, and a tie costs no
second request.  A name that ends while its group goes on cannot be split (a word end is not one
token the request can ask): it keeps the group's score, and the workspace's order decides.

Any answer that cannot be read as that - no logprobs, a position missing, a value that is NaN,
infinite or above 0 (answers.py ``logprob``), an id that was not asked for - fails the scoring
(``NameScoringFailed``, a ValueError: server/suggestion_path.py keeps the workspace's order and
logs the reason).  The whole scoring has a deadline (``SCORE_DEADLINE_S``): it runs before the
ghost text's own request, and a late order is worth less than the workspace's.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from typing import Any

from difill.engine.api import BackendError, Cancelled, FillOptions
from difill.engine.backends.answers import BadAnswer, logprob
from difill.engine.backends.vllm import SeededCanvasClient, canvas_size, lay_out
from difill.engine.backends.vllm_tokens import ContractRefused

SCORE_DEADLINE_S = 0.3  # the scoring's whole budget, /tokenize of new names included
MAX_ASKED = 128  # vllm/sampling_params.py MAX_LOGPROB_TOKEN_IDS
MAX_NAME_TOKENS = 8  # as engine/name_scores.py: deeper ties are left to the workspace
PARTIAL_WORD = re.compile(r"[A-Za-z0-9_]+$")  # as engine/name_scores.py, which imports torch
TOKEN_KEY = re.compile(r"token_id:(\d{1,9})")  # return_tokens_as_token_ids' keys


class NameScoringFailed(ValueError):
    """The server's read could not order the names; ``str(err)`` says why."""


def asked_slots(names_tokens: Sequence[list[int]]) -> list[set[int]]:
    """For each hole slot, the ids to ask there: every name's first token at slot 0, and at slot j
    the j-th tokens of names that still tie with another (same first j tokens, different names)."""
    slots: list[set[int]] = [{tokens[0] for tokens in names_tokens}]
    for depth in range(1, MAX_NAME_TOKENS):
        groups: dict[tuple[int, ...], set[int]] = {}
        for tokens in names_tokens:
            if len(tokens) > depth:
                groups.setdefault(tuple(tokens[:depth]), set()).add(tokens[depth])
        tied = set()
        for prefix, nexts in groups.items():
            sharing = sum(1 for t in names_tokens if tuple(t[:depth]) == prefix)
            if sharing > 1:
                tied |= nexts
        if not tied:
            break
        slots.append(tied)
    return slots


def scores_of(names_tokens: Sequence[list[int]], rows: Sequence[dict[int, float]]) -> list[float]:
    """Each name's score (the module docstring) from ``rows[j]``: the asked ids' log-probabilities
    at hole slot j."""
    scores = []
    for tokens in names_tokens:
        score = rows[0][tokens[0]]
        for depth in range(1, len(rows)):
            if len(tokens) <= depth:
                break
            rivals = {
                other[depth]
                for other in names_tokens
                if len(other) > depth and other[:depth] == tokens[:depth]
            }
            if len(rivals) > 1:  # the shared probability split by the next token
                score += rows[depth][tokens[depth]] - log_sum_exp([rows[depth][t] for t in rivals])
        scores.append(score)
    return scores


def log_sum_exp(values: Sequence[float]) -> float:
    """log(sum(exp(v))), shifted by the largest value so that no ``exp`` overflows."""
    most = max(values)
    return most + math.log(sum(math.exp(v - most) for v in values))


def read_rows(answer: Any, start: int, slots: Sequence[set[int]], asked: set[int]) -> list[dict[int, float]]:
    """The asked ids' log-probabilities at canvas positions ``start + j``; NameScoringFailed when
    the answer does not hold them, holds a value that is no log-probability, or an id not asked."""
    choices = answer.get("choices") if isinstance(answer, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
    top = logprobs.get("top_logprobs") if isinstance(logprobs, dict) else None
    if not isinstance(top, list):
        raise NameScoringFailed("the server's answer has no logprobs")
    if len(top) < start + len(slots):
        raise NameScoringFailed(f"the server's answer has logprobs for {len(top)} positions, not the hole's")
    rows = []
    for j, wanted in enumerate(slots):
        row = top[start + j]
        if not isinstance(row, dict):
            raise NameScoringFailed(f"the logprobs at position {start + j} are not a mapping")
        read: dict[int, float] = {}
        for key, value in row.items():
            match = TOKEN_KEY.fullmatch(key) if isinstance(key, str) else None
            if match is None or int(match[1]) not in asked:
                raise NameScoringFailed(
                    f"the logprobs name a token that was not asked for ({str(key)[:40]!r})"
                )
            try:
                read[int(match[1])] = logprob(value, f"the logprob of {key}")
            except BadAnswer as err:
                raise NameScoringFailed(str(err)) from None
        missing = sorted(wanted - set(read))
        if missing:
            raise NameScoringFailed(f"the logprobs at position {start + j} miss asked token(s) {missing[:5]}")
        rows.append(read)
    return rows


def score_names(
    seeded: SeededCanvasClient,
    prefix: str,
    suffix: str,
    names: Sequence[str],
    options: FillOptions,
    deadline_s: float = SCORE_DEADLINE_S,
) -> list[float]:
    """Each name's score at the cursor from one constrained read on the server (the module
    docstring); NameScoringFailed, with the reason, when it cannot be had within ``deadline_s``."""
    if not names:
        return []
    if not (seeded.active and (seeded.is_release or seeded.used)):
        raise NameScoringFailed(f"the server's path is not the seeded canvas ({seeded.describe()})")
    ends = time.monotonic() + deadline_s

    def late() -> bool:
        return time.monotonic() > ends

    try:
        return _score(seeded, options.context_block + prefix, suffix, names, options, late)
    except Cancelled:
        raise NameScoringFailed(f"the server did not answer within {deadline_s * 1000:g} ms") from None
    except (BackendError, ContractRefused) as err:
        raise NameScoringFailed(str(err)) from None


def _score(
    seeded: SeededCanvasClient, prefix: str, suffix: str, names: Sequence[str], options: FillOptions, late
):
    match = PARTIAL_WORD.search(prefix)
    typed = match.group() if match else ""
    prompt = prefix[: len(prefix) - len(typed)]  # a partly typed name is scored whole, as locally
    names_tokens = [seeded.tokens.tokenize(typed + name, late)[:MAX_NAME_TOKENS] for name in names]
    if not all(names_tokens):
        raise NameScoringFailed("a name has no tokens")
    slots = asked_slots(names_tokens)
    while len(slots) > 1 and len(set().union(*slots)) > MAX_ASKED:
        slots.pop()  # fewer tie-breaking slots: the request may ask at most 128 ids
    asked = set().union(*slots)
    if len(asked) > MAX_ASKED:
        raise NameScoringFailed(f"{len(asked)} distinct first tokens; a read asks at most {MAX_ASKED}")
    suffix_ids = seeded.suffix_ids(suffix, options.suffix_tokens, late)
    hole = max(len(t) for t in names_tokens) + 1  # as engine/name_scores.py: room for the word end
    length = canvas_size(hole + len(suffix_ids), seeded.served_length)
    canvas = lay_out([hole, suffix_ids], length, seeded.vocab_size, options.seed)
    ids = sorted(asked)
    body = seeded.request_body(prompt, canvas, 1, 1, late)
    body["vllm_xargs"]["diffusion_constrained"] = True
    body |= {"logprobs": len(ids), "logprob_token_ids": ids, "return_tokens_as_token_ids": True}
    answer = seeded.post("/v1/completions", body, late)
    rows = read_rows(answer, canvas.holes[0][0], slots, asked)
    return scores_of(names_tokens, rows)
