"""Requests and answers for OpenAI-compatible servers (vLLM serving DiffusionGemma, ...).

Three ways to ask for a middle, from best to most widely supported:

* canvas seeding: difill's own canvas, for vLLM 0.32 or later (released; difill is tested
  against 0.33.0's rules); it lives in engine/backends/vllm.py, and the two ways below are the
  fallback;
* ``suffix``: ``/v1/completions`` with ``prompt`` = prefix and ``suffix`` = suffix, the OpenAI
  insert API.  difill serve-http accepts it; plain vLLM refuses it with HTTP 400, mlx-vlm's server
  has no ``/v1/completions`` at all (HTTP 404);
* ``chat``: ``/v1/chat/completions`` with the fill-in-the-middle instruction below; the server
  applies the model's own chat template.  Works with any instruction-tuned model.  A server that
  decodes without skipping special tokens (mlx-vlm's) may return the model's filler, hole and turn
  markers: ``chat_text`` cuts the answer at the first one that ends it and drops the rest.
"""

from __future__ import annotations

import re
from typing import Any

from difill.engine.api import Candidate, FillOptions, FillResult, FillStats

HOLE = "<|fill_here|>"
FIM_SYSTEM = (
    "You complete code. The user sends a file with exactly one " + HOLE + " marker. Reply with only the "
    "text that replaces the marker: no explanation, no code fences, and nothing that is already "
    "before or after the marker."
)
REWRITE_SYSTEM = (
    "You edit code. The user sends a file in which the part to rewrite is between <|rewrite|> and "
    "<|end|>, and an instruction. Reply with only the new text for that part: no explanation, no code "
    "fences, nothing from outside the markers."
)
FENCE = re.compile(r"^```[\w+-]*\n(.*?)\n?```\s*$", re.DOTALL)
# DiffusionGemma's (and difill's) special tokens as a chat answer may spell them: the first of
# ENDS_ANSWER ends the middle (after the filler a diffusion model writes only filler; after an end
# of turn, nothing), the others are dropped wherever they are.
ENDS_ANSWER = ("<|fill|>", "<eos>", "<end_of_turn>", "<turn|>")
DROPPED = ("<|hole|>", HOLE, "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<bos>", "<pad>",
           "<start_of_turn>", "<|turn>")  # fmt: skip


def completion_body(model: str, prefix: str, options: FillOptions, max_tokens: int) -> dict[str, Any]:
    return {
        "model": model,
        "prompt": prefix,
        "max_tokens": max_tokens,
        "temperature": 0,
        "seed": options.seed,
        "n": 1,
        "stream": False,
    }


def fim_chat_body(model: str, prefix: str, suffix: str, options: FillOptions) -> dict[str, Any]:
    return {
        "model": model,
        "messages": [
            {"role": "system", "content": FIM_SYSTEM},
            {"role": "user", "content": prefix + HOLE + suffix},
        ],
        "max_tokens": options.max_hole_tokens,
        "temperature": 0,
        "seed": options.seed,
        "stream": False,
    }


def rewrite_chat_body(
    model: str, prefix: str, selection: str, suffix: str, instruction: str | None, options: FillOptions
) -> dict[str, Any]:
    ask = instruction or "Improve this code without changing what it does."
    return {
        "model": model,
        "messages": [
            {"role": "system", "content": REWRITE_SYSTEM},
            {
                "role": "user",
                "content": f"{prefix}<|rewrite|>{selection}<|end|>{suffix}\n\nInstruction: {ask}",
            },
        ],
        "max_tokens": max(options.max_hole_tokens, 2 * len(selection) // 3 + 16),
        "temperature": 0,
        "seed": options.seed,
        "stream": False,
    }


def strip_fences(text: str) -> str:
    """A chat model's answer without the code fence it may wrap around it."""
    match = FENCE.match(text.strip())
    return match.group(1) if match else text


def without_special_tokens(text: str) -> str:
    """A chat answer up to the first token that ends it, without the markers it should not hold."""
    for end in ENDS_ANSWER:
        text = text.split(end, 1)[0]
    for marker in DROPPED:
        text = text.replace(marker, "")
    return text


def chat_text(text: str) -> str:
    """What a chat answer holds for the document: no special tokens, no code fence around it."""
    return strip_fences(without_special_tokens(text))


def result_of(text: str, complete: bool, tokens: int, hole: int, total_ms: float) -> FillResult:
    stats = FillStats(hole_tokens=tokens, total_ms=total_ms, hole_length=hole, candidates=1)
    candidates = [Candidate(text, hole, 0.0, complete)] if text else []
    return FillResult(text, candidates, stats)
