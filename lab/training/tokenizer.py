"""Train difill's byte-level BPE tokenizer and save it as a transformers fast tokenizer.

Byte-level BPE round-trips any text exactly (tabs, CRLF, non-ASCII), which code completion needs:
a tokenizer that normalises whitespace would corrupt the user's file.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from difill.engine.vocab import SPECIAL_TOKENS, SpecialTokens


def train_tokenizer(texts: Iterable[str], vocab_size: int = 8192) -> PreTrainedTokenizerFast:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        min_frequency=2,
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    names = SpecialTokens()
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token=names.pad,
        eos_token=names.eos,
        bos_token=names.bos,
        additional_special_tokens=[
            names.fill,
            names.hole,
            names.fim_prefix,
            names.fim_suffix,
            names.fim_middle,
        ],
        clean_up_tokenization_spaces=False,
    )


def save_tokenizer(tokenizer: PreTrainedTokenizerFast, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(out_dir)
