"""Special tokens and the ids the canvas needs, read from whatever tokenizer is loaded.

difill's own tokenizer has a filler token (``<|fill|>``) that the model writes after a middle
that is shorter than the hole.  A foreign checkpoint (e.g. DiffusionGemma-26B) has none; there the
model ends a middle early with its end-of-sequence token, so eos plays the filler's part.
"""

from __future__ import annotations

from dataclasses import dataclass

from transformers import PreTrainedTokenizerBase


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
    def from_tokenizer(cls, tokenizer: PreTrainedTokenizerBase, model_vocab_size: int) -> TokenIds:
        names = SpecialTokens()
        vocab = tokenizer.get_vocab()
        eos = tokenizer.eos_token_id
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
        if eos is None:
            raise ValueError("the tokenizer has no eos token; difill needs one to end a middle")
        fill_id = vocab.get(names.fill)
        filler = (fill_id,) if fill_id is not None else (eos,)
        special = set(tokenizer.all_special_ids) | {pad, eos}
        special.update(i for tok, i in vocab.items() if tok.startswith("<|") and tok.endswith("|>"))
        banned = tuple(sorted(i for i in special if i not in filler and i < model_vocab_size))
        return cls(
            pad=pad,
            eos=eos,
            bos=tokenizer.bos_token_id,
            filler=filler,
            banned_in_hole=banned,
            vocab_size=model_vocab_size,
        )
