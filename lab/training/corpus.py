"""Build the training corpus from permissively licensed Python: the standard library and the
pinned packages of ``corpus_packages.txt`` (fetched and licence-checked by ``corpus_sources``).

Tests and anything that looks like a code benchmark (HumanEval, MBPP, ...) are left out so held-out
evaluation stays honest.  Exact and near-duplicate files are removed (MinHash over 5-line
shingles), then files are split into train / held-out by a hash of their path, so the split is
the same on every machine.

Output (``out_dir``): ``train.jsonl`` and ``heldout.jsonl`` (one ``{"path", "text"}`` a line) and
``manifest.json``: every source with its version, licence, archive, sha256, files and bytes, and
every pinned package left out with the reason. It holds no paths of the machine that built it.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import sysconfig
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np

from lab.training.corpus_sources import (
    Pin,
    archive_licence,
    archive_members,
    fetch,
    is_permissive,
    read_pins,
)

EXCLUDED_PARTS = {"test", "tests", "testing", "idle_test", "turtledemo", "__pycache__", "site-packages"}
BENCHMARK_NAMES = re.compile(r"human_?eval|mbpp|apps_bench|codecontests|ds1000|leetcode|benchmark", re.I)
HELDOUT_PERCENT = 3
MAX_FILE_BYTES = 400_000
MIN_FILE_CHARS = 64
NUM_HASHES = 32
BANDS = 8


@dataclass
class Source:
    name: str
    version: str
    licence: str
    archive: str  # file name of the archive (or "stdlib")
    sha256: str
    files: int = 0
    bytes: int = 0


@dataclass
class Manifest:
    sources: list[Source] = field(default_factory=list)
    left_out: list[dict] = field(default_factory=list)  # {"package", "licence", "reason"}
    train_files: int = 0
    heldout_files: int = 0
    train_bytes: int = 0
    heldout_bytes: int = 0
    duplicates_removed: int = 0


def is_wanted(rel: PurePosixPath, size: int) -> bool:
    """A source file worth training on: Python, not a test, not a benchmark, not huge."""
    if rel.suffix != ".py" or any(p.endswith((".dist-info", ".egg-info")) for p in rel.parts):
        return False
    if any(part in EXCLUDED_PARTS or part.startswith("test_") for part in rel.parts[:-1]):
        return False
    if rel.name.startswith("test_") or rel.name.endswith("_test.py") or BENCHMARK_NAMES.search(str(rel)):
        return False
    return size <= MAX_FILE_BYTES


def _stdlib_files() -> Iterator[tuple[PurePosixPath, bytes]]:
    root = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(root.rglob("*.py")):
        yield PurePosixPath(path.relative_to(root).as_posix()), path.read_bytes()


def package_path(rel: PurePosixPath) -> PurePosixPath:
    """Wheels may put modules under ``name.data/purelib/``; sdists often under ``src/``."""
    parts = rel.parts
    if len(parts) > 2 and parts[0].endswith(".data") and parts[1] in ("purelib", "platlib"):
        parts = parts[2:]
    return PurePosixPath(*parts)


def minhash(text: str) -> np.ndarray:
    """(NUM_HASHES,) uint64 MinHash signature over 5-line shingles of stripped non-empty lines."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    shingles = {"\n".join(lines[i : i + 5]) for i in range(max(1, len(lines) - 4))}
    digests = b"".join(hashlib.blake2b(s.encode(), digest_size=16).digest() for s in shingles)
    pairs = np.frombuffer(digests, dtype="<u8").reshape(-1, 2)  # (S, 2): base, step
    base, step = pairs[:, :1], pairs[:, 1:] | np.uint64(1)
    i = np.arange(NUM_HASHES, dtype=np.uint64)[None, :]
    with np.errstate(over="ignore"):
        return (base + i * step).min(axis=0)  # uint64 arithmetic wraps: mod 2^64


def band_keys(signature: np.ndarray) -> list[bytes]:
    rows = NUM_HASHES // BANDS
    return [bytes([b]) + signature[b * rows : (b + 1) * rows].tobytes() for b in range(BANDS)]


def is_heldout(path: str) -> bool:
    return int(hashlib.sha1(path.encode()).hexdigest(), 16) % 100 < HELDOUT_PERCENT


def build_corpus(out_dir: Path, cache: Path, pins: list[Pin] | None = None, log=print) -> Manifest:
    """The corpus from the standard library and ``pins`` (default: the pinned list)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = Manifest()
    seen: set[bytes] = set()
    python = platform.python_version()

    def sources() -> Iterator[tuple[Source, Iterator[tuple[PurePosixPath, bytes]]]]:
        yield Source("python-stdlib", python, "PSF-2.0", "stdlib", ""), _stdlib_files()
        for pin in read_pins() if pins is None else pins:
            archive = fetch(pin, cache)
            licence = archive_licence(archive)
            if not is_permissive(licence):
                manifest.left_out.append({"package": f"{pin.name}=={pin.version}", "licence": licence,
                                          "reason": "not a permissive licence in the archive's metadata"})  # fmt: skip
                log(f"left out {pin.name}=={pin.version}: licence {licence!r}")
                continue
            members = ((package_path(p), data) for p, data in archive_members(archive))
            yield Source(pin.name, pin.version, licence, archive.filename, archive.sha256), members

    with open(out_dir / "train.jsonl", "w") as train, open(out_dir / "heldout.jsonl", "w") as heldout:
        for source, members in sources():
            for rel, data in members:
                if not is_wanted(rel, len(data)):
                    continue
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    continue
                if len(text.strip()) < MIN_FILE_CHARS:
                    continue
                keys = band_keys(minhash(text))
                if any(k in seen for k in keys):
                    manifest.duplicates_removed += 1
                    continue
                seen.update(keys)
                name = f"{source.name}=={source.version}/{rel}"
                record = json.dumps({"path": name, "text": text}) + "\n"
                size = len(data)
                if is_heldout(name):
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
            log(
                f"{source.name}=={source.version} ({source.licence}): {source.files} files, {source.bytes:,} bytes"
            )
    (out_dir / "manifest.json").write_text(json.dumps(asdict(manifest), indent=1) + "\n")
    return manifest


def read_jsonl(path: Path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f]
