"""The name transformers gives the KV-cache argument, for every version pyproject allows.

transformers 5.24 renamed ``past_key_values`` to ``cache``: the old name still works until 5.40
but raises a FutureWarning on every forward, and outputs expose the cache as ``.cache`` (their
``.past_key_values`` is a property that logs a warning).  5.23, which pyproject still allows (the
GPU machines install it), knows only the old name; there a ``cache=`` keyword would vanish into the
layers' ``**kwargs`` and the prefix cache would be silently ignored.  So the name is read from the
installed signature, not assumed.  tests/engine/test_hf_compat.py checks that every forward difill
hands a cache to declares it.
"""

from __future__ import annotations

import inspect
from typing import Any

from transformers import DiffusionGemmaForBlockDiffusion

_DECLARED = inspect.signature(DiffusionGemmaForBlockDiffusion.forward).parameters
CACHE_ARG = "cache" if "cache" in _DECLARED else "past_key_values"


def cache_kwargs(cache: Any) -> dict[str, Any]:
    """``{CACHE_ARG: cache}``, to pass a KV cache to a transformers forward: ``layer(..., **cache_kwargs(c))``."""
    return {CACHE_ARG: cache}


def output_cache(output: Any) -> Any:
    """The KV cache a transformers forward returned."""
    return getattr(output, CACHE_ARG)
