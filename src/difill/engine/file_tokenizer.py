"""difill's own tokenizer read without transformers, for the engines that run the weights elsewhere.

``import transformers`` builds its registry of every model's module (a walk of 500 folders): 0.4 s
of a 1.7 s `difill fill` on the llama.cpp engine, which needs nothing from transformers but the
tokenizer (docs/install.md).  difill's checkpoints save a plain ``tokenizer.json`` with
transformers' ``TokenizersBackend``, a thin layer over the ``tokenizers`` library; ``FileTokenizer``
is the part of that layer the engines call (engine/tokens.py ``encode``, ``decode``, what
engine/vocab.py reads), over the same ``tokenizers.Tokenizer``.  Any other tokenizer, or a
tokenizer_config.json with settings this class does not apply, is transformers' to load
(``FileTokenizer.read`` says which); tests/engine/test_model_loading.py checks that both give
the same ids, texts and special tokens.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Tokenizer

SPECIAL_NAMES = ("bos_token", "eos_token", "unk_token", "pad_token")
# tokenizer_config.json keys whose transformers defaults FileTokenizer reproduces: any other key
# (a chat template, truncation, add_bos_token...) could change what transformers' layer does.
PLAIN_KEYS = {
    "backend", "tokenizer_class", "clean_up_tokenization_spaces", "extra_special_tokens", "is_local",
    "local_files_only", "model_max_length", *SPECIAL_NAMES,
}  # fmt: skip


def plain_settings(path: Path) -> dict[str, Any] | None:
    """tokenizer_config.json's values when they ask for what ``FileTokenizer`` does: a
    ``TokenizersBackend`` over tokenizer.json, no clean-up of spaces, special tokens named by their
    text, and nothing else set; None otherwise."""
    settings_file = path / "tokenizer_config.json"
    if not settings_file.is_file() or not (path / "tokenizer.json").is_file():
        return None
    settings = json.loads(settings_file.read_text())
    extra = settings.get("extra_special_tokens", [])
    named = [settings[name] for name in SPECIAL_NAMES if name in settings]
    if (
        settings.get("tokenizer_class") != "TokenizersBackend"
        or settings.get("clean_up_tokenization_spaces", False)
        or not set(settings) <= PLAIN_KEYS
        or not isinstance(extra, list)
        or not all(isinstance(token, str) for token in [*named, *extra])
    ):
        return None
    return settings


class FileTokenizer:
    """transformers' ``TokenizersBackend`` as the engines use it, for the checkpoints ``read`` takes."""

    @classmethod
    def read(cls, path: Path) -> FileTokenizer | None:
        """The tokenizer in ``path``, or None where transformers' layer could read it differently:
        settings beyond ``plain_settings``, or a special token that tokenizer.json lacks (which
        transformers would add to the vocabulary)."""
        settings = plain_settings(path)
        if settings is None:
            return None
        tokenizer = cls(path, settings)
        added = tokenizer.added_tokens_decoder
        special = {token.content for token in added.values() if token.special}
        return tokenizer if set(tokenizer.all_special_tokens) <= special else None

    def __init__(self, path: Path, settings: dict[str, Any]) -> None:
        self._tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        # engine/tokens.py always encodes with split_special_tokens=True (a "<|fill|>" in a user's
        # file is text), and decoding does not read the flag: set once, not per call.
        self._tokenizer.encode_special_tokens = True
        self._vocab = self._tokenizer.get_vocab(with_added_tokens=True)
        for name in SPECIAL_NAMES:
            token = settings.get(name)
            setattr(self, name, token)
            setattr(self, f"{name}_id", self._vocab.get(token) if token is not None else None)
        self.extra_special_tokens: list[str] = list(settings.get("extra_special_tokens", []))

    def __call__(
        self, text: str, add_special_tokens: bool = False, split_special_tokens: bool = True
    ) -> dict[str, list[int]]:
        if add_special_tokens or not split_special_tokens:  # engine/tokens.py encode's call only
            raise ValueError("FileTokenizer encodes as engine/tokens.py does: no added special tokens, split")
        return {"input_ids": self._tokenizer.encode(text, add_special_tokens=False).ids}

    def decode(self, token_ids: Iterable[int], skip_special_tokens: bool = False) -> str:
        return self._tokenizer.decode([int(i) for i in token_ids], skip_special_tokens=skip_special_tokens)

    def get_vocab(self) -> dict[str, int]:
        return dict(self._vocab)

    def __len__(self) -> int:
        return len(self._vocab)

    @property
    def all_special_tokens(self) -> list[str]:
        named = [getattr(self, name) for name in ("bos_token", "eos_token", "unk_token", "pad_token")]
        return list(dict.fromkeys(t for t in [*named, *self.extra_special_tokens] if t is not None))

    @property
    def all_special_ids(self) -> list[int]:
        return [self._vocab[token] for token in self.all_special_tokens if token in self._vocab]

    @property
    def added_tokens_decoder(self) -> dict[int, AddedToken]:
        return dict(sorted(self._tokenizer.get_added_tokens_decoder().items()))
