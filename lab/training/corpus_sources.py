"""Where the corpus comes from: the pinned package list, fetched as archives, licence-checked.

Every source is a pinned ``name==version`` in ``corpus_packages.txt``. Its archive is fetched from
PyPI's simple index (PEP 691 JSON), chosen by a fixed rule (a pure wheel, else the newest
CPython manylinux x86_64 wheel, else the sdist) and checked against the index's sha256, so a
fresh machine rebuilds the same corpus from the list alone. torch is the exception: it comes
through ``pip download``, which on these machines takes the CPU wheel lying on disk (an unpinned
torch would be a multi-GB CUDA build).

The licence is read from the archive's own metadata (``METADATA`` / ``PKG-INFO``), never from
what happens to be installed.
"""

from __future__ import annotations

import email.parser
import hashlib
import io
import json
import re
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

PACKAGE_LIST = Path(__file__).with_name("corpus_packages.txt")
# The eval's workspaces: packages that are not in the corpus (lab/workspace_eval.py).
WORKSPACE_PACKAGE_LIST = Path(__file__).with_name("workspace_packages.txt")
# Where the server's rules are chosen: packages in neither of the lists above.
TUNING_PACKAGE_LIST = Path(__file__).with_name("tuning_packages.txt")
SIMPLE_INDEX = "https://pypi.org/simple"
THROUGH_PIP = {"torch"}  # the CPU wheel on disk; PyPI's own torch wheels are CUDA builds

PERMISSIVE = re.compile(
    r"\b(MIT|BSD|Apache|ISC|PSF|Python Software Foundation|Zlib|Unlicense|CC0|0BSD|HPND)\b", re.I
)
COPYLEFT = re.compile(r"\b(GPL|LGPL|AGPL|MPL|Mozilla|EPL|Eclipse|CDDL|EUPL|copyleft|SSPL)\b", re.I)


@dataclass(frozen=True)
class Pin:
    name: str
    version: str


@dataclass(frozen=True)
class Archive:
    pin: Pin
    filename: str
    sha256: str
    path: Path


def read_pins(path: Path = PACKAGE_LIST) -> list[Pin]:
    pins = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins.append(Pin(name.strip(), version.strip()))
    return pins


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _choose_file(files: list[dict], pin: Pin) -> dict:
    """A fixed choice among a release's files, so every machine takes the same archive."""
    stem = re.sub(r"[-_.]+", "_", pin.name).lower()
    mine = [f for f in files if f["filename"].lower().startswith(f"{stem}-{pin.version}".lower())
            and not f.get("yanked")]  # fmt: skip
    pure = sorted(f["filename"] for f in mine if f["filename"].endswith("-none-any.whl"))
    linux = sorted(
        f["filename"] for f in mine
        if f["filename"].endswith(".whl") and "x86_64" in f["filename"] and "manylinux" in f["filename"]
        and re.search(r"-cp3\d+-cp3\d+-", f["filename"])
    )  # fmt: skip
    sdists = sorted(f["filename"] for f in mine if f["filename"].endswith((".tar.gz", ".zip")))
    for candidates in (pure, linux[-1:], sdists):
        if candidates:
            return next(f for f in mine if f["filename"] == candidates[0])
    raise RuntimeError(f"{pin.name}=={pin.version}: no wheel or sdist on {SIMPLE_INDEX}")


def fetch(pin: Pin, cache: Path) -> Archive:
    """Download (or reuse from ``cache``) the pinned archive and check its hash."""
    cache.mkdir(parents=True, exist_ok=True)
    if _normalise(pin.name) in THROUGH_PIP:
        return _fetch_with_pip(pin, cache)
    request = urllib.request.Request(
        f"{SIMPLE_INDEX}/{_normalise(pin.name)}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        index = json.load(response)
    chosen = _choose_file(index["files"], pin)
    target = cache / chosen["filename"]
    expected = chosen["hashes"]["sha256"]
    if not target.exists() or _sha256(target) != expected:
        with urllib.request.urlopen(chosen["url"], timeout=300) as response:
            target.write_bytes(response.read())
    actual = _sha256(target)
    if actual != expected:
        raise RuntimeError(f"{chosen['filename']}: sha256 {actual} does not match the index's {expected}")
    return Archive(pin, chosen["filename"], actual, target)


def _fetch_with_pip(pin: Pin, cache: Path) -> Archive:
    wanted = f"{pin.name}=={pin.version}"
    existing = sorted(cache.glob(f"{pin.name}-{pin.version}*.whl"))
    if not existing:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(cache),
             wanted], check=True,
        )  # fmt: skip
        existing = sorted(cache.glob(f"{pin.name}-{pin.version}*.whl"))
    if not existing:
        raise RuntimeError(f"pip download {wanted} gave no wheel in {cache}")
    return Archive(pin, existing[0].name, _sha256(existing[0]), existing[0])


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def archive_members(archive: Archive) -> Iterator[tuple[PurePosixPath, bytes]]:
    """(path inside the package, bytes) of every file, sorted by path; sdists lose their top folder."""
    if archive.filename.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive.path) as z:
            for name in sorted(z.namelist()):
                if not name.endswith("/"):
                    path = PurePosixPath(name)
                    if archive.filename.endswith(".zip"):
                        path = PurePosixPath(*path.parts[1:])
                    yield path, z.read(name)
    else:
        with tarfile.open(archive.path) as t:
            members = sorted((m for m in t.getmembers() if m.isfile()), key=lambda m: m.name)
            for m in members:
                f = t.extractfile(m)
                if f is not None:
                    yield PurePosixPath(*PurePosixPath(m.name).parts[1:]), f.read()


def archive_licence(archive: Archive) -> str:
    """The licence the archive's own metadata declares (expression, classifiers, or License:)."""
    for path, data in archive_members(archive):
        is_wheel_meta = path.name == "METADATA" and path.parent.name.endswith(".dist-info")
        is_sdist_meta = path == PurePosixPath("PKG-INFO")
        if is_wheel_meta or is_sdist_meta:
            return licence_of(data.decode("utf-8", "replace"))
    return ""


def licence_of(metadata_text: str) -> str:
    meta = email.parser.Parser().parse(io.StringIO(metadata_text), headersonly=True)
    if meta.get("License-Expression"):
        return meta["License-Expression"].strip()
    classifiers = [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    if classifiers:
        return "; ".join(c.split("::")[-1].strip() for c in classifiers)
    first_line = (meta.get("License") or "").strip().splitlines()
    return first_line[0].strip() if first_line else ""


def is_permissive(licence: str) -> bool:
    return bool(PERMISSIVE.search(licence)) and not COPYLEFT.search(licence)
