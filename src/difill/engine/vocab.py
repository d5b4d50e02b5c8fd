"""Special tokens and the ids the canvas needs, read from whatever tokenizer is loaded.

difill's own tokenizer has a filler token (``<|fill|>``) that the model writes after a middle
that is shorter than the hole.  A foreign checkpoint (e.g. DiffusionGemma-26B) has none; by default
it then gets no filler at all (``filler_policy="none"``): every middle fills its hole, and the
engine's several candidate hole lengths decide how long the middle is.  ``"eos"`` and ``"pad"``
make that token play the filler's part instead.  ``difill eval --filler`` measures them on the
default model (with its own filler banned); the README's "Real checkpoints" says why none is the
default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the llama.cpp and MLX engines' tokenizer is a FileTokenizer: no transformers
    from transformers import PreTrainedTokenizerBase

    from difill.engine.file_tokenizer import FileTokenizer

    Tokenizer = PreTrainedTokenizerBase | FileTokenizer  # what LoadedModel.tokenizer holds


@dataclass(frozen=True)
class SpecialTokens:
    pad: str = "<pad>"
    eos: str = "<eos>"
    bos: str = "<bos>"
    fill: str = "<|fill|>"  # written by the model after a middle that is shorter than the hole
    hole: str = "<|hole|>"  # marks a hole in text given to fill_holes
    fim_prefix: str = "<|fim_prefix|>"  # the autoregressive baseline's PSM format
    fim_suffix: str = "<|fim_suffix|>"
    fim_middle: str = "<|fim_middle|>"


SPECIAL_TOKENS = (
    SpecialTokens.pad, SpecialTokens.eos, SpecialTokens.bos, SpecialTokens.fill,
    SpecialTokens.hole, SpecialTokens.fim_prefix, SpecialTokens.fim_suffix, SpecialTokens.fim_middle,
)  # fmt: skip


@dataclass(frozen=True)
class TokenIds:
    """The ids the engine needs, resolved once per tokenizer."""

    pad: int
    eos: int
    bos: int | None
    filler: tuple[int, ...]  # ids that end a middle early (the first one is written in training)
    banned_in_hole: tuple[int, ...]  # special ids that must never appear inside a hole
    vocab_size: int

    @classmethod
    def from_tokenizer(
        cls, tokenizer: Tokenizer, model_vocab_size: int, filler_policy: str = "auto"
    ) -> TokenIds:
        """Resolve the ids; ``filler_policy`` says how a checkpoint without ``<|fill|>`` ends a middle.

        ``"auto"``/``"fill"``: difill's filler when the tokenizer has it, else ``"none"``;
        ``"eos"`` / ``"pad"``: that token pads a short middle; ``"none"``: no filler at all - every
        middle fills its hole and the candidate hole lengths decide how long it is.
        """
        names = SpecialTokens()
        vocab = tokenizer.get_vocab()
        eos = tokenizer.eos_token_id
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
        if eos is None:
            raise ValueError("the tokenizer has no eos token; difill needs one to end a middle")
        fill_id = vocab.get(names.fill)
        filler = filler_ids(filler_policy, fill_id, eos, pad)
        banned = sorted(i for i in control_ids(tokenizer, model_vocab_size) if i not in filler)
        return cls(
            pad=pad,
            eos=eos,
            bos=tokenizer.bos_token_id,
            filler=filler,
            banned_in_hole=tuple(banned),
            vocab_size=model_vocab_size,
        )


FILLER_POLICIES = ("auto", "fill", "eos", "pad", "none")
WITHOUT_FILL_DEFAULT = (
    "none"  # eos / pad / none measured equal on the default model: README, "Real checkpoints"
)


def filler_ids(policy: str, fill_id: int | None, eos: int, pad: int) -> tuple[int, ...]:
    if policy not in FILLER_POLICIES:
        raise ValueError(f"unknown filler policy {policy!r}; use one of {', '.join(FILLER_POLICIES)}")
    if fill_id is not None and policy in ("auto", "fill"):
        return (fill_id,)
    if policy in ("auto", "fill"):
        policy = WITHOUT_FILL_DEFAULT
    return {"eos": (eos,), "pad": (pad,), "none": ()}[policy]


def control_ids(tokenizer: Tokenizer, model_vocab_size: int) -> set[int]:
    """Every id a hole must never hold, read from the tokenizer's own flags and tables.

    * the special tokens it names (bos, eos, pad, unk, mask and its extra special tokens);
    * every entry of its added-token table flagged ``special`` (Gemma 4: ``<|turn>``, ``<turn|>``,
      ``<|channel>``, tool and image delimiters, ...);
    * every other added token too, except whitespace-only ones: those are text the tokenizer emits
      for indentation (Gemma's added runs of spaces and newlines), the rest are control or unused
      slots the model was never meant to write (``<unused*>`` when not flagged special);
    * ids the model can produce but the tokenizer has no entry for (an embedding matrix padded past
      the vocabulary).
    """
    banned = {i for i in tokenizer.all_special_ids if i is not None}
    for i, added in tokenizer.added_tokens_decoder.items():
        if added.special or added.content.strip():
            banned.add(i)
    known = set(tokenizer.get_vocab().values())
    banned.update(i for i in range(model_vocab_size) if i not in known)
    return {i for i in banned if 0 <= i < model_vocab_size}
