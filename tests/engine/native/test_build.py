"""``difill build-native``'s source: the tree this repository carries, and clear refusals of trees
and tarballs that are not llama.cpp pull request #24423 or that would write outside the cache."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from difill.engine.native import build
from difill.engine.native.build import REQUIRED, BuildError, check_tree, resolve_source


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DIFILL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("DIFILL_LLAMA_SOURCE", raising=False)
    return tmp_path / "cache"


def fake_tree(root: Path, leave_out: str | None = None, strip_symbol: str | None = None) -> Path:
    """The files and symbols the worker needs of PR #24423, and nothing else."""
    for name, symbols in REQUIRED.items():
        if name == leave_out:
            continue
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"void {s}(void);\n" for s in symbols if s != strip_symbol))
    return root


def tarball(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def test_the_repository_carries_the_tree_it_builds():
    tar = build.vendored_tarball()
    assert tar is not None and tar.is_relative_to(build.REPO_ROOT / "third_party" / "llama.cpp")
    assert (tar.parent / "LICENSE").read_text().startswith("MIT License")
    with tarfile.open(tar) as archive:
        names = set(archive.getnames())
    assert {f"llama.cpp/{name}" for name in REQUIRED} <= names


def test_a_tree_of_pr_24423_is_taken(tmp_path):
    tree = fake_tree(tmp_path / "llama.cpp")
    assert resolve_source(tree) == tree.resolve()


@pytest.mark.parametrize("missing", sorted(REQUIRED))
def test_a_tree_without_a_needed_file_names_it(tmp_path, missing):
    tree = fake_tree(tmp_path / "llama.cpp", leave_out=missing)
    with pytest.raises(BuildError, match=f"has no {missing}"):
        check_tree(tree)


def test_a_mainline_llama_h_names_the_missing_symbol(tmp_path):
    tree = fake_tree(tmp_path / "llama.cpp", strip_symbol="llama_diffusion_set_sc")
    with pytest.raises(BuildError, match="does not declare llama_diffusion_set_sc"):
        check_tree(tree)


def test_with_nothing_carried_the_error_says_what_to_pass(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "VENDORED", tmp_path / "not-here")  # as in an installed wheel
    with pytest.raises(BuildError, match="--source") as err:
        resolve_source(None)
    assert "third_party/llama.cpp/llama.cpp-pr24423-c3fb972.tar.xz" in str(err.value)


@pytest.mark.parametrize(
    "hostile",
    [
        [(member("llama.cpp/../../escaped.txt"), b"x")],
        [(member("/tmp/difill-absolute.txt"), b"x")],
        [
            (member("llama.cpp", tarfile.DIRTYPE), None),
            (member("llama.cpp/out", tarfile.SYMTYPE, "/etc"), None),
        ],
        [
            (member("llama.cpp", tarfile.DIRTYPE), None),
            (member("llama.cpp/up", tarfile.SYMTYPE, "../../.."), None),
        ],
    ],
    ids=["dot-dot", "absolute", "absolute-symlink", "symlink-out"],
)
def test_a_tarball_that_escapes_its_folder_is_refused_and_writes_nothing(tmp_path, cache, hostile):
    tar = tarball(tmp_path / "hostile.tar.gz", hostile)
    with pytest.raises(BuildError, match="refused, member"):
        resolve_source(tar)
    assert not (tmp_path / "escaped.txt").exists() and not Path("/tmp/difill-absolute.txt").exists()
    assert not any(cache.glob("native/src-*"))  # the partial unpacking is removed


def test_a_tarball_without_one_top_level_folder_says_so(tmp_path):
    tar = tarball(tmp_path / "flat.tar.gz", [(member("CMakeLists.txt"), b"")])
    with pytest.raises(BuildError, match="0 top-level folders"):
        resolve_source(tar)


def test_a_file_that_is_not_a_tarball_says_so(tmp_path):
    bogus = tmp_path / "bogus.tar.xz"
    bogus.write_bytes(b"not a tarball")
    with pytest.raises(BuildError, match="cannot be read as a tarball"):
        resolve_source(bogus)
    with pytest.raises(BuildError, match="neither a folder nor a tarball"):
        resolve_source(Path(__file__))


def test_no_cmake_says_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no cmake, no compiler
    with pytest.raises(BuildError, match="`cmake` is not installed"):
        build.build_native(fake_tree(tmp_path / "llama.cpp"))


def test_the_command_reports_a_hostile_tarball_in_one_line(tmp_path, cache):
    tar = tarball(tmp_path / "hostile.tar.gz", [(member("../escaped.txt"), b"x")])
    done = subprocess.run(
        [sys.executable, "-m", "difill", "build-native", "--source", str(tar)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert done.stderr.startswith("difill: ") and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path.parent / "escaped.txt").exists()


# ---------------------------------------------------------------- difill's patches to the tree


def test_each_patch_says_why_and_what_it_is_for_upstream_before_its_diff():
    patches = build.patch_files()
    assert [p.name[:3] for p in patches] == [f"{i:02d}-" for i in range(1, len(patches) + 1)]
    for patch in patches:
        head, _, diff = patch.read_text().partition("diff --git ")
        assert "Why:" in head and "Upstream:" in head and diff, patch.name


@pytest.mark.slow
def test_every_patch_applies_to_the_carried_tree_in_a_copy(cache):
    tree = resolve_source(None)  # the carried tarball, unpacked into this test's cache
    before = (tree / "include/llama.h").read_bytes()
    copy = build.patched(tree, build.patch_files())
    assert (tree / "include/llama.h").read_bytes() == before  # the source is never written
    header = (copy / "include/llama.h").read_text()
    assert "llama_diffusion_set_rows" in header and "llama_diffusion_set_sc_slots" in header
    assert build.patched(tree, build.patch_files()) == copy  # applied once


def unified_diff(name: str, old: str, new: str, after: str) -> str:
    """A diff of a file's first line, ``after`` its second (git anchors a hunk without context)."""
    return (
        f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n@@ -1,2 +1,2 @@\n"
        f"-{old}\n+{new}\n {after}\n"
    )


def test_a_patch_that_does_not_apply_names_itself_and_the_tree_and_leaves_no_copy(tmp_path, cache):
    tree = fake_tree(tmp_path / "llama.cpp")
    first_line, second_line = (tree / "include/llama.h").read_text().splitlines()[:2]
    good = tmp_path / "01-good.patch"
    good.write_text("Why: a test.\n\n" + unified_diff("include/llama.h", first_line, "void renamed(void);", second_line))
    bad = tmp_path / "02-bad.patch"  # written for a line the tree does not have
    bad.write_text(unified_diff("include/llama.h", "void not_in_this_tree(void);", "void x(void);", second_line))
    with pytest.raises(BuildError) as raised:
        build.patched(tree, [good, bad])
    message = str(raised.value)
    assert "patch 02-bad.patch does not apply" in message and str(tree) in message
    assert "--no-patches" in message
    assert not list((cache / "native").glob("patched-*"))  # nothing half-patched is left to build
    assert (tree / "include/llama.h").read_text().splitlines()[0] == first_line
    copy = build.patched(tree, [good])
    assert (copy / "include/llama.h").read_text().splitlines()[0] == "void renamed(void);"
