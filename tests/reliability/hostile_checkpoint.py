"""A checkpoint that attacks whoever loads it carelessly: the tiny model's real safetensors
weights and tokenizer, plus a pickle ``pytorch_model.bin`` and custom code behind ``auto_map`` in
config.json and tokenizer_config.json.  Each payload only creates a marker file when it runs."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

PICKLE_MARKER = "pickle-ran"
CODE_MARKER = "remote-code-ran"


class _OpensAFile:
    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):  # what unpickling calls: open(path, "w"), which creates the marker
        return (open, (self.path, "w"))


def build_hostile_checkpoint(model_dir: Path, out: Path, markers: Path) -> Path:
    shutil.copytree(model_dir, out)
    markers.mkdir(parents=True, exist_ok=True)
    (out / "pytorch_model.bin").write_bytes(pickle.dumps(_OpensAFile(markers / PICKLE_MARKER)))
    (out / "evil_code.py").write_text(
        f"open({str(markers / CODE_MARKER)!r}, 'w').close()\n"
        "from transformers import PretrainedConfig, PreTrainedTokenizerFast\n\n"
        "class EvilConfig(PretrainedConfig):\n    model_type = 'evil'\n\n"
        "class EvilTokenizer(PreTrainedTokenizerFast):\n    pass\n"
    )
    _update_json(out / "config.json", auto_map={"AutoConfig": "evil_code.EvilConfig"})
    _update_json(out / "tokenizer_config.json", auto_map={"AutoTokenizer": [None, "evil_code.EvilTokenizer"]})
    return out


def _update_json(path: Path, **values) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **values}, indent=2))
