"""One validation of every remote answer: its JSON, its shape, and bounds on what it holds.

A remote server is not trusted to be well-behaved.  Before any of its answer reaches the text
pipeline (which runs on the language server's event loop), it is checked here:

* JSON nested more than ``MAX_DEPTH`` deep is refused (Python's parser would raise
  RecursionError, which no caller expects);
* every field has the type the protocol says (a candidate's ``text: null`` is a bad shape, not a
  crash later), and every number is finite;
* a log-probability is at most 0 (``logprob``): a finite 800.0 is no probability, and its
  ``exp`` overflowed while names were scored;
* at most ``MAX_CANDIDATES`` candidates, holes' middles or token ids (a 40,000-candidate answer
  froze the server for 13 s);
* every text is at most ``MAX_TEXT_CHARS`` long, and a fill's middles at most
  ``max_tokens * MAX_CHARS_PER_TOKEN`` (a 4 MiB single-line answer was shown whole as ghost
  text with maxTokens 32): a middle is cut there and marked incomplete, a rewrite that long is
  refused (cut, it would delete the rest of the selection);
* a lone surrogate (``"\\ud800"`` in JSON) becomes U+FFFD, which the filters treat as garbage.

Every failure is ``BadAnswer``, which the remote backend turns into one clear ``BackendError``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from difill.engine.api import Candidate, FillResult, FillStats, HolesResult
from difill.text.characters import without_lone_surrogates
from difill.text.pipeline import MAX_CANDIDATES

MAX_DEPTH = 32  # difill's and OpenAI's answers nest 4 deep
MAX_TEXT_CHARS = 1 << 20
MAX_CHARS_PER_TOKEN = 16  # a generous bound: code averages about 4 characters a token
MAX_TOKEN_IDS = 65_536  # a /tokenize answer: the suffix's tokens
# A /v1/models answer: mlx-vlm's lists every model in the Hugging Face cache too (model_id)
MAX_MODELS = 4096
LOGPROB_SLACK = 1e-3  # above 0 by this much is a log-softmax's rounding, read as 0


class BadAnswer(ValueError):
    """The answer is not what the protocol says; the message says what is wrong."""


def parse_json(content: bytes) -> Any:
    """The answer's JSON; BadAnswer when it is not JSON or nests deeper than ``MAX_DEPTH``."""
    try:
        value = json.loads(content)
    except RecursionError:
        raise BadAnswer(f"the JSON nests deeper than {MAX_DEPTH} levels") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise BadAnswer(f"not JSON ({type(err).__name__})") from None
    if _depth(value) > MAX_DEPTH:
        raise BadAnswer(f"the JSON nests deeper than {MAX_DEPTH} levels")
    return value


def fill_result(raw: Any, max_tokens: int | None) -> FillResult:
    """A difill server's fill (``{text, candidates, stats}``), each middle within ``max_tokens``
    (None: a rewrite, which ``bounded_rewrite`` checks instead of cutting)."""
    answer = _object(raw, "the answer")
    candidates = [_candidate(c, max_tokens) for c in _list(answer.get("candidates"), "candidates")]
    text = _cut(text_of(answer.get("text"), "text"), max_tokens)[0]
    return FillResult(text, candidates, stats(answer.get("stats")))


def holes_result(raw: Any, max_tokens: int) -> HolesResult:
    """A difill server's holes (``{middles, text, stats}``), each middle within ``max_tokens``."""
    answer = _object(raw, "the answer")
    middles = [_cut(text_of(m, "a middle"), max_tokens)[0] for m in _list(answer.get("middles"), "middles")]
    return HolesResult(middles, text_of(answer.get("text"), "text"), stats(answer.get("stats")))


def bounded_rewrite(text: str, selection: str, max_tokens: int) -> str:
    """A rewrite's text, refused (BadAnswer) when longer than any rewrite of ``selection`` can be."""
    limit = (max(max_tokens, len(selection)) + 16) * MAX_CHARS_PER_TOKEN
    if len(text) > limit:
        raise BadAnswer(f"a rewrite of {len(text):,} characters for a selection of {len(selection):,}")
    return text


def first_choice(raw: Any, chat: bool, max_tokens: int | None) -> tuple[str, bool, int]:
    """(text, ended by the model, completion tokens) of an OpenAI answer's first choice, cut to
    ``max_tokens`` (None: not cut)."""
    answer = _object(raw, "the answer")
    choices = _list(answer.get("choices"), "choices")
    if not choices:
        raise BadAnswer("the answer has no 'choices'")
    choice = _object(choices[0], "a choice")
    source = _object(choice.get("message"), "a choice's message") if chat else choice
    text, cut = _cut(
        text_of(source.get("content" if chat else "text"), "the first choice's text"), max_tokens
    )
    usage = answer.get("usage")
    tokens = usage.get("completion_tokens", 0) if isinstance(usage, dict) else 0
    tokens = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0 else 0
    return text, choice.get("finish_reason") != "length" and not cut, tokens


def token_ids(raw: Any) -> list[int]:
    """The ids of a ``/tokenize`` answer (``{tokens: [int, ...]}``)."""
    ids = _list(_object(raw, "the answer").get("tokens"), "tokens", MAX_TOKEN_IDS)
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
        raise BadAnswer("'tokens' must be a list of token ids")
    return ids


def model_id(raw: Any) -> str:
    """The served model of a ``/v1/models`` answer: the first one it lists, or, where entries say
    ``loaded`` (mlx-vlm's server), the first loaded one.

    mlx-vlm 0.7.10 (mlx_vlm/server/app.py ``models_endpoint``) lists the models it has loaded and
    also every model it could load (the Hugging Face cache, ``MLX_VLM_MODEL_PATHS``), all sorted by
    id, with ``loaded`` true or false; a chat request loads whichever model it names.  The first
    entry may be one that is not served, and asking for it would swap the server's model."""
    listed = _list(_object(raw, "the answer").get("data"), "data", MAX_MODELS)
    models = [_object(m, "a model") for m in listed]
    if not models:
        raise BadAnswer("the server lists no model")
    if any("loaded" in m for m in models):
        loaded = [m for m in models if m.get("loaded") is True]
        if not loaded:
            raise BadAnswer(
                "the server lists models but has none loaded (mlx-vlm: start it with --model, "
                "or set difill's remote model)"
            )
        models = loaded
    return text_of(models[0].get("id"), "a model's id")


def logprob(value: Any, what: str) -> float:
    """A log-probability of an answer: a finite number at most 0 (``LOGPROB_SLACK`` above it is
    rounding, read as 0); BadAnswer otherwise."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise BadAnswer(f"{what} is {value!r:.40}, not a finite number")
    if value > LOGPROB_SLACK:
        raise BadAnswer(f"{what} is {value!r:.40}, above 0: not a log-probability")
    return min(float(value), 0.0)


def stats(raw: Any) -> FillStats:
    """FillStats from a server's stats; unknown fields (a newer server's) are dropped."""
    if raw is None:
        return FillStats()
    given = _object(raw, "stats")
    out = FillStats()
    for name, default in vars(FillStats()).items():
        if name not in given:
            continue
        if isinstance(default, bool):
            if not isinstance(given[name], bool):
                raise BadAnswer(f"stats.{name} must be true or false, got {_kind(given[name])}")
            setattr(out, name, given[name])
        else:
            setattr(out, name, _number(given[name], f"stats.{name}", type(default)))
    return out


def text_of(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise BadAnswer(f"{what} must be a string, got {_kind(value)}")
    if len(value) > MAX_TEXT_CHARS:
        raise BadAnswer(f"{what} is {len(value):,} characters long")
    return without_lone_surrogates(value)


# ---------------------------------------------------------------------------- helpers


def _candidate(raw: Any, max_tokens: int | None) -> Candidate:
    given = _object(raw, "a candidate")
    text, cut = _cut(text_of(given.get("text"), "a candidate's text"), max_tokens)
    complete = given.get("complete")
    if not isinstance(complete, bool):
        raise BadAnswer(f"a candidate's 'complete' must be true or false, got {_kind(complete)}")
    hole = _number(given.get("hole_length"), "a candidate's hole_length", int)
    score = _number(given.get("score"), "a candidate's score", float, finite=False)
    score = -math.inf if math.isnan(score) else score  # ranks last, like the worst score
    source = given.get("source", "model")  # the row it came from (an older server sends none)
    if not isinstance(source, str) or len(source) > 64:
        raise BadAnswer(f"a candidate's 'source' must be a short string, got {_kind(source)}")
    return Candidate(text, hole, score, complete and not cut, source)


def _cut(text: str, max_tokens: int | None) -> tuple[str, bool]:
    """``text`` within ``max_tokens`` tokens' worth of characters, and whether it was cut."""
    if max_tokens is None:
        return text, False
    limit = max(1, max_tokens) * MAX_CHARS_PER_TOKEN
    return (text[:limit], True) if len(text) > limit else (text, False)


def _object(value: Any, what: str) -> dict:
    if not isinstance(value, dict):
        raise BadAnswer(f"{what} must be an object, got {_kind(value)}")
    return value


def _list(value: Any, what: str, most: int = MAX_CANDIDATES) -> list:
    if not isinstance(value, list):
        raise BadAnswer(f"'{what}' must be a list, got {_kind(value)}")
    if len(value) > most:
        raise BadAnswer(f"'{what}' holds {len(value):,} items; at most {most:,} are accepted")
    return value


def _number(value: Any, what: str, kind: type, finite: bool = True) -> Any:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok and kind is int:
        ok = isinstance(value, int)
    if not ok or (finite and not math.isfinite(value)):
        raise BadAnswer(
            f"{what} must be a finite {'integer' if kind is int else 'number'}, got {value!r:.40}"
        )
    return kind(value)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _depth(value: Any) -> int:
    """How deep containers nest in ``value`` (0 for a scalar), without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        current, depth = todo.pop()
        if isinstance(current, dict):
            current = list(current.values())
        if isinstance(current, list):
            deepest = max(deepest, depth)
            if depth <= MAX_DEPTH:  # deeper is refused anyway: no need to look further
                todo.extend((item, depth + 1) for item in current)
    return deepest
