"""``difill build-native``: build ``difill-llama-worker`` (worker.cpp) against a llama.cpp tree that
carries DiffusionGemma (pull request #24423).

The source is ``--source`` (a tree or a tarball of one), else ``$DIFILL_LLAMA_SOURCE``, else the
tarball this repository carries in ``third_party/llama.cpp/`` (a checkout or an editable install;
a wheel does not carry it, and the error then says what to pass).  Everything goes under the cache
(``~/.cache/difill/native``): the unpacked tarball, one build folder per source and flag set, and
``worker.json``, which names the binary the engine starts.  A second run with nothing changed is a
no-op (the stamp matches; CMake would have nothing to do either).

difill's patches (``patches/*.patch``, each with its reason at its top) are applied, in name order,
to a copy of the tree in the cache: the source itself is never written.  A patch that does not
apply names itself and the tree; ``--no-patches`` builds the tree as it is (the worker then runs
a fill's canvases one after another).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import subprocess
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no lock (one build at a time is then the user's to keep)
    fcntl = None

from difill.engine.api import BackendError
from difill.engine.disk import write_atomically

log = logging.getLogger("difill.engine")

NATIVE_DIR = Path(__file__).parent
REPO_ROOT = NATIVE_DIR.parents[3]  # src/difill/engine/native -> the checkout (absent in a wheel)
VENDORED = REPO_ROOT / "third_party" / "llama.cpp"
WORKER = "difill-llama-worker"
PATCHES_DIR = NATIVE_DIR / "patches"
TESTED_COMMIT = "c3fb97241295c196e09b783e705e84b96cd1bd74"  # PR #24423, as third_party/llama.cpp carries it
VENDOR_GLOB = "llama.cpp-pr24423-*.tar.xz"
TARBALL_SUFFIXES = (".tar.xz", ".tar.gz", ".tgz", ".tar")
HOW_TO_BUILD = "build it with `difill build-native` (docs/llamacpp.md)"
# What worker.cpp needs of a tree beyond mainline llama.cpp: each file, and the symbols it must declare.
REQUIRED = {
    "CMakeLists.txt": (),
    "include/llama.h": ("llama_diffusion_set_phase", "llama_diffusion_set_sc"),
    "src/models/diffusion-gemma.cpp": (),
}


class BuildError(BackendError):
    """The worker cannot be built or found; the message says what is missing and what to run."""


@dataclass(frozen=True)
class BuildResult:
    binary: Path
    built: bool  # False: it was current, nothing ran
    seconds: float
    patches: tuple[str, ...] = ()  # the patch files applied to the tree (patch_ids)


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


def patch_files() -> list[Path]:
    return sorted(PATCHES_DIR.glob("*.patch"))


def patch_ids(patches: list[Path]) -> list[str]:
    """Each patch's name and a digest of its text: the stamp's record of what a build applied."""
    return [f"{p.name}@{hashlib.sha256(p.read_bytes()).hexdigest()[:12]}" for p in patches]


def patched(tree: Path, patches: list[Path]) -> Path:
    """A copy of ``tree`` in the cache with ``patches`` applied (once: a second call finds it)."""
    digest = hashlib.sha256("\n".join([str(tree), *patch_ids(patches)]).encode()).hexdigest()[:16]
    target = native_cache() / f"patched-{digest}"
    copy = target / tree.name
    if (target / ".patched").is_file():
        return copy
    if shutil.which("git") is None:
        raise BuildError("`git` is not installed: difill's llama.cpp patches are applied with `git apply`")
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    # The tree's own history and build folders are not source: a user's checkout may hold gigabytes.
    shutil.copytree(tree, copy, symlinks=True, ignore=lambda folder, names: [
        n for n in names if Path(folder) == tree and (n == ".git" or n.startswith("build") and (tree / n).is_dir())
    ])  # fmt: skip
    # The copy is not a git repository: without the ceiling, git apply inside a repository that
    # holds the cache would take paths from that repository's top instead.
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(target)}
    for patch in patches:
        done = subprocess.run(
            ["git", "apply", "--whitespace=nowarn", str(patch)], cwd=copy, env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            shutil.rmtree(target, ignore_errors=True)
            reason = " ".join(done.stderr.split())[:400]
            raise BuildError(
                f"difill's patch {patch.name} does not apply to the llama.cpp tree {tree}: {reason}. The patches "
                f"are made for {TESTED_COMMIT[:7]}; `difill build-native --no-patches` builds the tree as it is"
            )
    write_atomically(target / ".patched", "\n".join(p.name for p in patches))
    return copy


def vendored_tarball() -> Path | None:
    """The tarball in third_party/llama.cpp/ of the checkout this module runs from, if any."""
    found = sorted(VENDORED.glob(VENDOR_GLOB)) if VENDORED.is_dir() else []
    return found[-1] if found else None


def resolve_source(source: str | Path | None) -> Path:
    """A llama.cpp tree: the given one, or a tarball unpacked once into the cache."""
    source = source or os.environ.get("DIFILL_LLAMA_SOURCE") or vendored_tarball()
    if source is None:
        raise BuildError(
            "no llama.cpp source: this install does not carry one (the wheel leaves out the tarball). Pass "
            "--source with the tarball third_party/llama.cpp/llama.cpp-pr24423-c3fb972.tar.xz of a difill "
            "checkout, or with a tree of llama.cpp pull request #24423 (DiffusionGemma, tested at "
            f"{TESTED_COMMIT[:7]}); DIFILL_LLAMA_SOURCE does the same (docs/llamacpp.md)"
        )
    source = Path(source).expanduser()
    if not source.exists():
        raise BuildError(f"{source} does not exist: --source takes a llama.cpp tree or a tarball of one")
    if source.is_file():
        if not source.name.endswith(TARBALL_SUFFIXES):
            raise BuildError(f"{source} is neither a folder nor a tarball ({', '.join(TARBALL_SUFFIXES)})")
        return unpacked(source)
    check_tree(source)
    return source.resolve()


def check_tree(tree: Path) -> None:
    """Refuse a tree that is not PR #24423's, naming the first file or symbol it lacks."""
    for name, symbols in REQUIRED.items():
        path = tree / name
        if not path.is_file():
            raise BuildError(
                f"{tree} is not a llama.cpp tree with DiffusionGemma: it has no {name} (llama.cpp pull "
                f"request #24423 has it; tested at {TESTED_COMMIT[:7]})"
            )
        text = path.read_text(encoding="utf-8", errors="replace") if symbols else ""
        for symbol in symbols:
            if symbol not in text:
                raise BuildError(
                    f"{tree}/{name} does not declare {symbol}: the tree is not llama.cpp pull request #24423 "
                    f"(tested at {TESTED_COMMIT[:7]}), which the worker needs"
                )


def safe_members(archive: tarfile.TarFile, target: Path, tarball: Path) -> list[tarfile.TarInfo]:
    """Every member as Python's "data" filter passes it, checked before anything is written: an
    absolute path, a ``..`` or a link out of the target refuses the whole tarball."""
    members = []
    for member in archive.getmembers():
        if os.path.isabs(member.name):  # the "data" filter would strip the "/" and go on: refuse it
            raise BuildError(f"{tarball}: refused, member {member.name!r} has an absolute path")
        try:
            members.append(tarfile.data_filter(member, str(target)))
        except tarfile.FilterError as err:
            raise BuildError(
                f"{tarball}: refused, member {member.name!r} would land outside the folder ({err})"
            ) from None
    return members


def unpacked(tarball: Path) -> Path:
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()[:16]
    target = native_cache() / f"src-{digest}"
    if not (target / ".unpacked").is_file():
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        try:
            with tarfile.open(tarball) as archive:
                archive.extractall(target, members=safe_members(archive, target, tarball), filter="data")
        except BuildError:
            shutil.rmtree(target, ignore_errors=True)
            raise
        except (tarfile.TarError, EOFError, OSError) as err:
            shutil.rmtree(target, ignore_errors=True)
            raise BuildError(f"{tarball} cannot be read as a tarball: {err}") from None
        write_atomically(target / ".unpacked", str(tarball))
    folders = [p for p in target.iterdir() if p.is_dir()]
    if len(folders) != 1:
        raise BuildError(
            f"{tarball} holds {len(folders)} top-level folders: a llama.cpp tarball holds exactly one, the tree"
        )
    check_tree(folders[0])
    return folders[0].resolve()


def cmake_flags(cuda: bool, metal: bool, native: bool) -> list[str]:
    flags = ["-DCMAKE_BUILD_TYPE=Release", f"-DGGML_NATIVE={'ON' if native else 'OFF'}"]
    if cuda:
        flags.append("-DGGML_CUDA=ON")
    if metal:
        flags.append("-DGGML_METAL=ON")
    return flags


def build_native(
    source: str | Path | None = None, cuda: bool = False, metal: bool = False, native: bool = True,
    jobs: int | None = None, log=print, patches: bool = True,
) -> BuildResult:  # fmt: skip
    """Build the worker (CPU by default) and record it as the one the engine starts; ``patches``
    False builds the tree without difill's patches."""
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise BuildError(
                f"`{tool}` is not installed: the llama.cpp worker needs CMake and a C++17 compiler"
            )
    started = time.perf_counter()
    # One build at a time per cache: test processes and editors may ask at once, and two CMake runs
    # in one build folder, or two unpackings of one tarball, would corrupt each other.
    with build_lock():
        tree = resolve_source(source)
        applied = patch_files() if patches else []
        if applied:
            tree = patched(tree, applied)
        return _build(tree, patch_ids(applied), cmake_flags(cuda, metal, native), jobs, log, started)


@contextlib.contextmanager
def build_lock() -> Iterator[None]:
    native_cache().mkdir(parents=True, exist_ok=True)
    with open(native_cache() / "build.lock", "w") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
        yield


def _build(tree: Path, patches: list[str], flags: list[str], jobs: int | None, log, started: float) -> BuildResult:
    key = hashlib.sha256(f"{tree}|{' '.join(flags)}".encode()).hexdigest()[:12]
    build_dir = native_cache() / f"build-{key}"
    binary = build_dir / WORKER
    stamp = {
        "source": str(tree), "flags": flags, "patches": patches, "worker": worker_sources_digest(),
        "binary": str(binary),
    }  # fmt: skip
    stamp_file = build_dir / "difill-stamp.json"
    if binary.is_file() and read_stamp(stamp_file) == stamp:
        record_current(stamp)
        return BuildResult(binary, False, time.perf_counter() - started, tuple(patches))
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
    write_atomically(stamp_file, json.dumps(stamp))
    record_current(stamp)
    return BuildResult(binary, True, time.perf_counter() - started, tuple(patches))


def default_jobs() -> int:
    return max(1, os.cpu_count() or 1)


def record_current(stamp: dict) -> None:
    path = native_cache() / "worker.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(stamp))


def patched_worker_built() -> bool:
    """Whether the worker the engine would start is current and carries every patch of this
    difill, as it is now: what ``engine: auto`` asks before it picks llama.cpp for the shipped
    model (a patch changed since the build means building again, as a changed worker.cpp does)."""
    try:
        built_worker()
    except BuildError:
        return False
    stamp = read_stamp(native_cache() / "worker.json")
    return stamp is not None and stamp.get("patches") == patch_ids(patch_files())


def read_stamp(path: Path) -> dict | None:
    """A stamp written by this module; None when it is missing or unreadable (empty, cut short by a
    crash or a full disk before stamps were written atomically, edited): then it is "not built",
    never an error that stops a model from loading (issue 62)."""
    try:
        stamp = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        log.warning("%s is unreadable (%s): taken as not built", path, type(err).__name__)
        return None
    if not isinstance(stamp, dict) or not isinstance(stamp.get("binary"), str):
        log.warning("%s is not a stamp of difill's: taken as not built", path)
        return None
    return stamp


def built_worker() -> Path:
    """The binary the last ``difill build-native`` built from these sources; a clear error if none."""
    path = native_cache() / "worker.json"
    if not path.is_file():
        raise BuildError(f"the llama.cpp worker is not built: {HOW_TO_BUILD}")
    stamp = read_stamp(path)
    if stamp is None:
        raise BuildError(f"the record of the llama.cpp worker {path} is unreadable: re-{HOW_TO_BUILD}")
    binary = Path(stamp["binary"])
    if not binary.is_file():
        raise BuildError(f"the llama.cpp worker {binary} is missing: {HOW_TO_BUILD}")
    if stamp.get("worker") != worker_sources_digest():
        raise BuildError(
            f"the llama.cpp worker {binary} was built from an older worker.cpp: re-{HOW_TO_BUILD}"
        )
    return binary
