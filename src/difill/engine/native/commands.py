"""``difill build-native`` and ``difill export-gguf`` (argument parsing: difill/cli.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from difill.engine.api import ModelLoadError


def build(args: argparse.Namespace) -> int:
    from difill.engine.native.build import BuildError, build_native

    try:
        result = build_native(
            args.source, cuda=args.cuda, metal=args.metal, native=not args.portable, jobs=args.jobs,
            patches=not args.no_patches,
        )
    except BuildError as err:
        raise SystemExit(f"difill: {err}") from err
    state = f"built in {result.seconds:.0f} s" if result.built else "already current"
    tree = f"difill's {len(result.patches)} patches applied" if result.patches else "the tree as it is, no patches"
    print(f"{result.binary} ({state}; {tree})")
    return 0


def export(args: argparse.Namespace) -> int:
    from difill.engine.native.gguf_export import export_gguf

    try:
        out = export_gguf(Path(args.model_dir), Path(args.out), args.type)
    except ModelLoadError as err:
        raise SystemExit(f"difill: {err}") from err
    print(f"{out} ({out.stat().st_size / 2**20:.1f} MiB, {args.type})")
    return 0
