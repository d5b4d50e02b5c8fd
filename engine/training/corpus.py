"""Build the training corpus from permissively licensed Python code found on this machine.

Sources: the Python standard library (PSF) and an allow-list of installed distributions whose
metadata declares MIT, BSD, Apache-2.0, ISC or PSF.  Tests and anything that looks like a code
benchmark (HumanEval, MBPP, ...) are left out so held-out evaluation stays honest.  Exact and
near-duplicate files are removed (MinHash over 5-line shingles), then files are split into
train / held-out by a hash of their path, so the split is deterministic across machines.

Output (``out_dir``): ``train.jsonl`` and ``heldout.jsonl`` (one ``{"path", "text"}`` a line) and
``manifest.json`` (every source with its licence, file count and bytes).
"""

from __future__ import annotations

import hashlib
import json
import re
import sysconfig
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

# Distributions taken from site-packages, if installed and their licence is permissive.
ALLOWED_DISTRIBUTIONS = (
    "attrs",
    "click",
    "flask",
    "jinja2",
    "blinker",
    "itsdangerous",
    "markupsafe",
    "idna",
    "jmespath",
    "jedi",
    "asttokens",
    "executing",
    "decorator",
    "jsonschema",
    "ipython",
    "boto3",
    "pydantic",
    "packaging",
    "pluggy",
    "iniconfig",
    "colorama",
    "python-dateutil",
    "charset-normalizer",
    "cloudpickle",
    "docker",
    "graphql-core",
    "jsonpatch",
    "jsonpointer",
    "lazy-object-proxy",
    "annotated-types",
    "backcall",
    "cfn-lint",
    "joserfc",
    "moto",
)
PERMISSIVE = re.compile(r"\b(MIT|BSD|Apache|ISC|PSF|Python Software Foundation|MIT-0)\b", re.I)
EXCLUDED_PARTS = {"test", "tests", "testing", "idle_test", "turtledemo", "__pycache__", "site-packages"}
BENCHMARK_NAMES = re.compile(r"human_?eval|mbpp|apps_bench|codecontests|ds1000|leetcode", re.I)
HELDOUT_PERCENT = 3
MAX_FILE_BYTES = 400_000


@dataclass
class Source:
    name: str
    licence: str
    root: str
    files: int = 0
    bytes: int = 0


@dataclass
class Manifest:
    sources: list[Source] = field(default_factory=list)
    train_files: int = 0
    heldout_files: int = 0
    train_bytes: int = 0
    heldout_bytes: int = 0
    duplicates_removed: int = 0


def distribution_licence(dist: metadata.Distribution) -> str:
    meta = dist.metadata
    text = meta.get("License-Expression") or ""
    if not text:
        classifiers = [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
        text = "; ".join(c.split("::")[-1].strip() for c in classifiers)
    if not text:
        text = (meta.get("License") or "").splitlines()[0] if meta.get("License") else ""
    return text.strip()


def _is_wanted(path: Path, root: Path) -> bool:
    rel = path.relative_to(root)
    if any(part in EXCLUDED_PARTS or part.startswith("test_") for part in rel.parts[:-1]):
        return False
    if rel.name.startswith("test_") or BENCHMARK_NAMES.search(str(rel)):
        return False
    return path.stat().st_size <= MAX_FILE_BYTES


def discover_sources() -> list[tuple[Source, list[Path]]]:
    """Every source root with the Python files it contributes."""
    found: list[tuple[Source, list[Path]]] = []
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.rglob("*.py") if _is_wanted(p, stdlib))
    found.append((Source("python-stdlib", "PSF-2.0", str(stdlib)), files))
    for name in ALLOWED_DISTRIBUTIONS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        licence = distribution_licence(dist)
        if not PERMISSIVE.search(licence):
            continue
        base = Path(dist.locate_file(""))
        paths = sorted(
            {base / f for f in dist.files or [] if str(f).endswith(".py") and ".dist-info" not in str(f)}
        )
        paths = [p for p in paths if p.is_file() and _is_wanted(p, base)]
        if paths:
            found.append((Source(f"{dist.metadata['Name']}=={dist.version}", licence, str(base)), paths))
    return found


def _minhash(text: str, num_hashes: int = 32) -> tuple[int, ...]:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    shingles = {"\n".join(lines[i : i + 5]) for i in range(max(1, len(lines) - 4))}
    mins = [2**64] * num_hashes
    for shingle in shingles:
        digest = hashlib.blake2b(shingle.encode(), digest_size=8 * 4).digest()
        base = int.from_bytes(digest[:8], "little")
        step = int.from_bytes(digest[8:16], "little") | 1
        for i in range(num_hashes):
            value = (base + i * step) % (2**64)
            if value < mins[i]:
                mins[i] = value
    return tuple(mins)


def _near_duplicate_keys(signature: tuple[int, ...], bands: int = 8) -> list[tuple[int, tuple[int, ...]]]:
    rows = len(signature) // bands
    return [(b, signature[b * rows : (b + 1) * rows]) for b in range(bands)]


def is_heldout(path: str) -> bool:
    return int(hashlib.sha1(path.encode()).hexdigest(), 16) % 100 < HELDOUT_PERCENT


def build_corpus(out_dir: Path) -> Manifest:
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = Manifest()
    seen_bands: set[tuple[int, tuple[int, ...]]] = set()
    with open(out_dir / "train.jsonl", "w") as train, open(out_dir / "heldout.jsonl", "w") as heldout:
        for source, paths in discover_sources():
            for path in paths:
                try:
                    text = path.read_text(encoding="utf-8")
                except (UnicodeDecodeError, OSError):
                    continue
                if len(text.strip()) < 64:
                    continue
                keys = _near_duplicate_keys(_minhash(text))
                if any(k in seen_bands for k in keys):
                    manifest.duplicates_removed += 1
                    continue
                seen_bands.update(keys)
                rel = f"{source.name}/{path.relative_to(source.root)}"
                record = json.dumps({"path": rel, "text": text}) + "\n"
                size = len(text.encode())
                if is_heldout(rel):
                    heldout.write(record)
                    manifest.heldout_files += 1
                    manifest.heldout_bytes += size
                else:
                    train.write(record)
                    manifest.train_files += 1
                    manifest.train_bytes += size
                source.files += 1
                source.bytes += size
            manifest.sources.append(source)
    (out_dir / "manifest.json").write_text(json.dumps(asdict(manifest), indent=1) + "\n")
    return manifest


def read_jsonl(path: Path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f]
