"""``difill build-native``: build ``difill-llama-worker`` (worker.cpp) against a llama.cpp tree that
carries DiffusionGemma (pull request #24423).

The source is ``--source`` (a tree or a ``.tar.xz`` of one), else ``$DIFILL_LLAMA_SOURCE``, else
the tarball in ``../shared/vendor/`` next to this repository (what CI builds).  Everything goes
under the cache (``~/.cache/difill/native``): the unpacked tarball, one build folder per source
and flag set, and ``worker.json``, which names the binary the engine starts.  A second run with
nothing changed is a no-op (the stamp matches; CMake would have nothing to do either).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from difill.engine.api import BackendError

NATIVE_DIR = Path(__file__).parent
REPO_ROOT = NATIVE_DIR.parents[1]
WORKER = "difill-llama-worker"
TESTED_COMMIT = "c3fb97241295c196e09b783e705e84b96cd1bd74"  # PR #24423, as ../shared/vendor carries it
VENDOR_GLOB = "llama.cpp-pr24423-*.tar.xz"
HOW_TO_BUILD = "build it with `difill build-native` (docs/llamacpp.md says where to get a llama.cpp tree with DiffusionGemma)"


class BuildError(BackendError):
    """The worker cannot be built or found; the message says what is missing and what to run."""


@dataclass(frozen=True)
class BuildResult:
    binary: Path
    built: bool  # False: it was current, nothing ran
    seconds: float


def cache_dir() -> Path:
    """difill's cache: $DIFILL_CACHE_DIR, else $XDG_CACHE_HOME/difill, else ~/.cache/difill."""
    root = os.environ.get("DIFILL_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "difill"
    )
    return Path(root)


def native_cache() -> Path:
    return cache_dir() / "native"


def worker_sources_digest() -> str:
    """What the binary is built from in this repository: a changed worker.cpp means a rebuild."""
    digest = hashlib.sha256()
    for name in ("worker.cpp", "CMakeLists.txt"):
        digest.update((NATIVE_DIR / name).read_bytes())
    return digest.hexdigest()[:16]


def vendored_tarball() -> Path | None:
    for vendor in (REPO_ROOT.parent / "shared" / "vendor", Path.cwd().parent / "shared" / "vendor"):
        found = sorted(vendor.glob(VENDOR_GLOB)) if vendor.is_dir() else []
        if found:
            return found[-1]
    return None


def resolve_source(source: str | Path | None) -> Path:
    """A llama.cpp tree: the given one, or a tarball unpacked once into the cache."""
    source = source or os.environ.get("DIFILL_LLAMA_SOURCE") or vendored_tarball()
    if source is None:
        raise BuildError(
            "no llama.cpp source: pass --source DIR with a tree that carries DiffusionGemma (pull request "
            f"#24423, tested at {TESTED_COMMIT[:7]}), set DIFILL_LLAMA_SOURCE, or put its tarball in "
            "../shared/vendor/ (docs/llamacpp.md)"
        )
    source = Path(source).expanduser()
    if source.is_file() and source.name.endswith((".tar.xz", ".tar.gz", ".tgz", ".tar")):
        return unpacked(source)
    if not (source / "include" / "llama.h").is_file():
        raise BuildError(f"{source} is not a llama.cpp tree (no include/llama.h)")
    if not (source / "src" / "models" / "diffusion-gemma.cpp").is_file():
        raise BuildError(
            f"{source} has no src/models/diffusion-gemma.cpp: it does not carry DiffusionGemma (llama.cpp pull "
            f"request #24423; tested at {TESTED_COMMIT[:7]})"
        )
    return source.resolve()


def unpacked(tarball: Path) -> Path:
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()[:16]
    target = native_cache() / f"src-{digest}"
    if (target / ".unpacked").is_file():
        return resolve_source(next(p for p in target.iterdir() if p.is_dir()))
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    with tarfile.open(tarball) as archive:
        archive.extractall(target, filter="data")
    (target / ".unpacked").write_text(str(tarball))
    return resolve_source(next(p for p in target.iterdir() if p.is_dir()))


def cmake_flags(cuda: bool, metal: bool, native: bool) -> list[str]:
    flags = ["-DCMAKE_BUILD_TYPE=Release", f"-DGGML_NATIVE={'ON' if native else 'OFF'}"]
    if cuda:
        flags.append("-DGGML_CUDA=ON")
    if metal:
        flags.append("-DGGML_METAL=ON")
    return flags


def build_native(
    source: str | Path | None = None, cuda: bool = False, metal: bool = False, native: bool = True,
    jobs: int | None = None, log=print,
) -> BuildResult:  # fmt: skip
    """Build the worker (CPU by default) and record it as the one the engine starts."""
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise BuildError(
                f"`{tool}` is not installed: the llama.cpp worker needs CMake and a C++17 compiler"
            )
    started = time.perf_counter()
    tree = resolve_source(source)
    flags = cmake_flags(cuda, metal, native)
    key = hashlib.sha256(f"{tree}|{' '.join(flags)}".encode()).hexdigest()[:12]
    build_dir = native_cache() / f"build-{key}"
    binary = build_dir / WORKER
    stamp = {"source": str(tree), "flags": flags, "worker": worker_sources_digest(), "binary": str(binary)}
    stamp_file = build_dir / "difill-stamp.json"
    if binary.is_file() and stamp_file.is_file() and json.loads(stamp_file.read_text()) == stamp:
        record_current(stamp)
        return BuildResult(binary, False, time.perf_counter() - started)
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    configure = [
        "cmake",
        "-S",
        str(NATIVE_DIR),
        "-B",
        str(build_dir),
        *generator,
        f"-DLLAMA_SOURCE={tree}",
        *flags,
    ]
    compile_ = ["cmake", "--build", str(build_dir), "--target", WORKER, "-j", str(jobs or default_jobs())]
    for command in (configure, compile_):
        log("$ " + " ".join(command))
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
            raise BuildError(f"building the llama.cpp worker failed ({command[1]}):\n{tail}")
    stamp_file.write_text(json.dumps(stamp))
    record_current(stamp)
    return BuildResult(binary, True, time.perf_counter() - started)


def default_jobs() -> int:
    return max(1, os.cpu_count() or 1)


def record_current(stamp: dict) -> None:
    path = native_cache() / "worker.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(stamp))


def built_worker() -> Path:
    """The binary the last ``difill build-native`` built from these sources; a clear error if none."""
    path = native_cache() / "worker.json"
    if not path.is_file():
        raise BuildError(f"the llama.cpp worker is not built: {HOW_TO_BUILD}")
    stamp = json.loads(path.read_text())
    binary = Path(stamp["binary"])
    if not binary.is_file():
        raise BuildError(f"the llama.cpp worker {binary} is missing: {HOW_TO_BUILD}")
    if stamp.get("worker") != worker_sources_digest():
        raise BuildError(
            f"the llama.cpp worker {binary} was built from an older worker.cpp: re-{HOW_TO_BUILD}"
        )
    return binary
