"""The corpus: pinned archives, licences from their own metadata, filters, dedup, a portable manifest."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path, PurePosixPath

import pytest

from lab.training import corpus as corpus_module
from lab.training.corpus import build_corpus, is_wanted, read_jsonl
from lab.training.corpus_sources import (
    Archive,
    Pin,
    _choose_file,
    archive_licence,
    is_permissive,
    licence_of,
    read_pins,
)

OTHER = "class Stack:\n" + "".join(
    f"    def op{i}(self, item):\n        self.items.insert({i}, item)\n\n" for i in range(30)
)
MODULE = "def area(width, height):\n    '''The area.'''\n    return width * height\n\n\n" + "".join(
    f"def f{i}(x):\n    return x + {i}\n\n" for i in range(30)
)


def make_wheel(path: Path, name: str, licence_header: str, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(
            f"{name}-1.0.dist-info/METADATA",
            f"Metadata-Version: 2.4\nName: {name}\nVersion: 1.0\n{licence_header}\n",
        )
        for rel, text in files.items():
            z.writestr(rel, text)
    return path


def test_the_pinned_list_is_pinned_and_sorted():
    pins = read_pins()
    assert len(pins) >= 30
    assert all(p.version and p.version[0].isdigit() for p in pins)
    assert [p.name for p in pins] == sorted(p.name for p in pins)
    assert Pin("torch", "2.13.0") in pins  # the CPU wheel of the README's pin, not a CUDA build


def test_the_archive_choice_is_fixed():
    files = [
        {"filename": "pkg-1.0.tar.gz", "url": "u0", "hashes": {}},
        {"filename": "pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", "url": "u1", "hashes": {}},
        {"filename": "pkg-1.0-cp313-cp313-manylinux_2_17_x86_64.whl", "url": "u2", "hashes": {}},
        {"filename": "pkg-1.0-cp313-cp313-macosx_11_0_arm64.whl", "url": "u3", "hashes": {}},
        {"filename": "pkg-1.1-py3-none-any.whl", "url": "u4", "hashes": {}},
    ]
    assert _choose_file(files, Pin("pkg", "1.0"))["url"] == "u2"  # newest CPython manylinux x86_64
    assert _choose_file(files + [{"filename": "pkg-1.0-py3-none-any.whl", "url": "u5", "hashes": {}}],
                        Pin("pkg", "1.0"))["url"] == "u5"  # fmt: skip
    assert _choose_file(files[:1], Pin("pkg", "1.0"))["url"] == "u0"
    with pytest.raises(RuntimeError, match="pkg==2.0"):
        _choose_file(files, Pin("pkg", "2.0"))


def test_licences_come_from_the_metadata_and_copyleft_is_refused():
    assert licence_of("Name: a\nLicense-Expression: BSD-3-Clause\nLicense: ignored\n") == "BSD-3-Clause"
    assert licence_of("Name: a\nClassifier: License :: OSI Approved :: MIT License\n") == "MIT License"
    assert licence_of("Name: a\nLicense: Apache 2.0\n  long text\n") == "Apache 2.0"
    assert is_permissive("BSD-3-Clause AND 0BSD AND MIT AND Zlib AND CC0-1.0")
    assert is_permissive("Apache-2.0 OR BSD-3-Clause")
    assert not is_permissive("MPL-2.0 AND MIT")
    assert not is_permissive("Public Domain; BSD License; GNU General Public License (GPL)")
    assert not is_permissive("LGPL-3.0-only")
    assert not is_permissive("")


def test_tests_benchmarks_and_metadata_are_left_out():
    assert is_wanted(PurePosixPath("pkg/core.py"), 100)
    assert not is_wanted(PurePosixPath("pkg/tests/core.py"), 100)
    assert not is_wanted(PurePosixPath("pkg/test_core.py"), 100)
    assert not is_wanted(PurePosixPath("pkg/core_test.py"), 100)
    assert not is_wanted(PurePosixPath("pkg/benchmarks/run.py"), 100)
    assert not is_wanted(PurePosixPath("human_eval/data.py"), 100)
    assert not is_wanted(PurePosixPath("pkg-1.0.dist-info/x.py"), 100)
    assert not is_wanted(PurePosixPath("pkg/data.json"), 100)
    assert not is_wanted(PurePosixPath("pkg/huge.py"), 10**7)


@pytest.fixture
def fake_sources(tmp_path, monkeypatch):
    """Two pinned packages (one MIT with a near-copy of a stdlib file, one GPL) and a tiny stdlib."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    archives = {
        "good": make_wheel(wheels / "good-1.0-py3-none-any.whl", "good", "License-Expression: MIT", {
            "good/core.py": OTHER,
            "good/copy.py": MODULE + "\n",  # the stdlib file again, with one more blank line
            "good/tests/test_core.py": MODULE,
        }),
        "bad": make_wheel(wheels / "bad-1.0-py3-none-any.whl", "bad", "License-Expression: GPL-3.0-only",
                          {"bad/core.py": OTHER.replace("Stack", "Queue")}),
    }  # fmt: skip

    def fake_fetch(pin: Pin, cache: Path) -> Archive:
        return Archive(pin, archives[pin.name].name, "0" * 64, archives[pin.name])

    monkeypatch.setattr(corpus_module, "fetch", fake_fetch)
    monkeypatch.setattr(
        corpus_module, "_stdlib_files", lambda: iter([(PurePosixPath("shapes.py"), MODULE.encode())])
    )
    return [Pin("good", "1.0"), Pin("bad", "1.0")], archives


def test_build_corpus_checks_licences_dedups_and_records_no_machine_paths(tmp_path, fake_sources):
    pins, archives = fake_sources
    assert archive_licence(Archive(pins[0], "x.whl", "", archives["good"])) == "MIT"
    manifest = build_corpus(tmp_path / "a", tmp_path / "cache", pins, log=lambda _: None)
    assert [s.name for s in manifest.sources] == ["python-stdlib", "good"]
    assert manifest.left_out == [{"package": "bad==1.0", "licence": "GPL-3.0-only",
                                  "reason": "not a permissive licence in the archive's metadata"}]  # fmt: skip
    assert manifest.duplicates_removed == 1  # good/copy.py
    docs = read_jsonl(tmp_path / "a" / "train.jsonl") + read_jsonl(tmp_path / "a" / "heldout.jsonl")
    assert sorted(d["path"] for d in docs) == [
        "good==1.0/good/core.py",
        "python-stdlib==" + manifest.sources[0].version + "/shapes.py",
    ]
    text = (tmp_path / "a" / "manifest.json").read_text()
    assert str(tmp_path) not in text and "site-packages" not in text
    good = json.loads(text)["sources"][1]
    assert good["licence"] == "MIT" and good["archive"] == "good-1.0-py3-none-any.whl" and good["files"] == 1

    build_corpus(tmp_path / "b", tmp_path / "cache", pins, log=lambda _: None)
    for name in ("train.jsonl", "heldout.jsonl", "manifest.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
