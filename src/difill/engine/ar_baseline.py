"""The autoregressive yardstick: a same-size causal model filling the middle in PSM format.

It is not part of the product.  `difill eval` and `difill bench` run it beside the diffusion
model so that speed and quality are compared in the same run, on the same cases.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoTokenizer, LlamaForCausalLM
from transformers.utils import logging as hf_logging

from difill.engine.api import About, Cancelled, Candidate, FillOptions, FillResult, FillStats
from difill.engine.hf_compat import cache_kwargs, output_cache
from difill.engine.model import (
    MODEL_LOAD,
    TOKENIZER_LOAD,
    check_model_dir,
    checkpoint_min_token_prob,
    load_error,
)
from difill.engine.tokens import encode_prefix_window, encode_suffix_window
from difill.engine.vocab import SpecialTokens, TokenIds
from difill.text.characters import common_prefix


@dataclass
class ARFill:
    text: str
    forwards: int  # one per generated token, plus the prompt
    tokens: int
    total_ms: float


class ARBaseline:
    def __init__(
        self, path: str | Path, prefix_tokens: int = 256, suffix_tokens: int = 32, prompt_cache: bool = False
    ) -> None:
        path = Path(path)
        check_model_dir(path)
        hf_logging.disable_progress_bar()
        try:  # as safe as the diffusion model's load: safetensors only, no checkpoint code
            self.tokenizer = AutoTokenizer.from_pretrained(path, **TOKENIZER_LOAD)
            self.model = LlamaForCausalLM.from_pretrained(path, dtype=torch.float32, **MODEL_LOAD).eval()
        except Exception as err:  # noqa: BLE001 - safetensors, tokenizers and json raise their own types
            raise load_error(path, err) from err
        self.ids = TokenIds.from_tokenizer(self.tokenizer, self.model.config.vocab_size)
        # The ghost-text cut chosen for these weights, as a diffusion checkpoint names its own.
        self.min_token_prob = checkpoint_min_token_prob(self.model.config)
        vocab = self.tokenizer.get_vocab()
        names = SpecialTokens()
        self.fim = (vocab[names.fim_prefix], vocab[names.fim_suffix], vocab[names.fim_middle])
        self.newline_ids = {i for t, i in vocab.items() if "Ċ" in t}  # byte-level BPE spells "\n" as Ċ
        self.prefix_tokens = prefix_tokens
        self.suffix_tokens = suffix_tokens
        # ``prompt_cache``: keep the last fill's KV cache and reuse its common start with the next
        # prompt, as the diffusion engine's prefix cache does (the editor bench's warm prefix, where
        # a yardstick that re-read its whole prompt would flatter diffusion).  Off by default: a
        # cropped cache is a float's width from a fresh forward, and the eval's figures stay put.
        self.prompt_cache = prompt_cache
        self._cached: tuple[list[int], object] | None = None  # (token ids in the cache, the cache)

    @torch.inference_mode()
    def fill(
        self, prefix: str, suffix: str, max_new_tokens: int = 24, single_line: bool = False,
        min_token_prob: float = 0.0,
    ) -> ARFill:  # fmt: skip
        started = time.perf_counter()
        prefix_ids = encode_prefix_window(self.tokenizer, self.ids, prefix, self.prefix_tokens)
        suffix_ids, complete = encode_suffix_window(self.tokenizer, suffix, self.suffix_tokens)
        if complete:
            suffix_ids = [*suffix_ids, self.ids.eos]
        fim_prefix, fim_suffix, fim_middle = self.fim
        prompt_ids = [fim_prefix, *prefix_ids, fim_suffix, *suffix_ids, fim_middle]
        out = self._prompt_forward(prompt_ids)
        cache, logits = output_cache(out), out.logits[:, -1]
        generated: list[int] = []
        forwards = 1
        for _ in range(max_new_tokens):
            token = int(logits.argmax(-1))
            if token == self.ids.eos:
                break
            if min_token_prob > 0 and float(torch.softmax(logits.float(), -1)[0, token]) < min_token_prob:
                break  # FillOptions.min_token_prob: show only what the model is sure of
            generated.append(token)
            if single_line and token in self.newline_ids and len(generated) > 1:
                break  # the pipeline (text) cuts the text at that newline
            out = self.model(input_ids=torch.tensor([[token]]), use_cache=True, **cache_kwargs(cache))
            cache, logits = output_cache(out), out.logits[:, -1]
            forwards += 1
        if self.prompt_cache:  # the cache holds the prompt and every generated token forwarded
            self._cached = (prompt_ids + generated[: forwards - 1], cache)
        middle = self.tokenizer.decode(generated)
        return ARFill(middle, forwards, len(generated), (time.perf_counter() - started) * 1000)


    def _prompt_forward(self, prompt_ids: list[int]):
        """The prompt's forward; with ``prompt_cache`` only past the start it shares with the last one."""
        common = 0
        if self.prompt_cache and self._cached is not None:
            cached_ids, cache = self._cached
            common = min(common_prefix(prompt_ids, cached_ids), len(prompt_ids) - 1)  # 1 token for logits
        if common == 0:
            return self.model(input_ids=torch.tensor([prompt_ids]), use_cache=True)
        if common < len(cached_ids):
            cache.crop(common - len(cached_ids))  # a negative count: the tokens to drop
        new = torch.tensor([prompt_ids[common:]])  # (1, n)
        return self.model(input_ids=new, use_cache=True, **cache_kwargs(cache))


class ARBackend:
    """The AR baseline behind the engine's interface, so the language server (and its benchmark)
    can run it exactly like the diffusion model.  It fills one hole; edits need the canvas."""

    def __init__(self, path: str | Path, prompt_cache: bool = False) -> None:
        self.baseline = ARBaseline(path, prompt_cache=prompt_cache)
        self.path = str(path)

    def about(self) -> About:
        return About("ar", self.path)

    def fill(self, prefix, suffix, options=None, should_stop=None, on_preview=None):
        options = options or FillOptions()
        if should_stop is not None and should_stop():
            raise Cancelled()
        min_prob = options.cut_probability(self.baseline.min_token_prob)
        r = self.baseline.fill(prefix, suffix, options.max_hole_tokens, options.single_line, min_prob)
        stats = FillStats(
            steps=r.forwards, decoder_forwards=r.forwards, hole_tokens=r.tokens,
            tokens_per_forward=r.tokens / max(1, r.forwards), total_ms=r.total_ms, candidates=1,
        )  # fmt: skip
        candidates = [Candidate(r.text, options.max_hole_tokens, 0.0, True)] if r.text else []
        return FillResult(r.text, candidates, stats)

    def fill_holes(self, text, marker="<|hole|>", options=None, should_stop=None):
        raise NotImplementedError("the autoregressive baseline fills one hole at a time")

    def rewrite(self, request, options=None, should_stop=None, on_preview=None):
        raise NotImplementedError("the autoregressive baseline cannot rewrite a selection")
