"""Typing replays at 6 keys a second through `difill serve`, several servers on the same cases.

    python -m lab.scripts.typing_runs --repos NAME=GIT_DIR@COMMIT,... --files 16 --out runs.json \
        --run gate:.venv/bin/python:whole --run before:OTHER_PYTHON:word --run open:.venv/bin/python:whole:0

Each ``--run LABEL:PYTHON:ACCEPT[:MIN_SHOW_PROBABILITY]`` starts a fresh `difill serve --engine
ENGINE` (``--engine``, default torch) under PYTHON (another checkout's, through a wrapper that sets its PYTHONPATH, for a
before/after) and types the same cases (lab/bench_typing.py ``typing_cases``), taking whole
suggestions (``whole``) or also their first words (``word``).  docs/show_gate.md's figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from lab.bench_typing import Server, _replay_on_a_fresh_server, repos_sources, typing_cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", required=True)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--rate", type=float, default=6.0)
    parser.add_argument("--out", required=True)
    parser.add_argument("--run", action="append", required=True)
    parser.add_argument("--engine", default="torch", choices=("torch", "llamacpp"))
    args = parser.parse_args()
    _, rows = repos_sources(args.repos)
    cases = typing_cases(rows, args.files)
    report: dict = {"repos": args.repos, "engine": args.engine, "paths": [c.path for c in cases]}
    for spec in args.run:
        label, python, accept, *threshold = spec.split(":")
        settings = {"minShowProbability": float(threshold[0])} if threshold else None
        server = Server(python=python, engine=args.engine, settings=settings)
        replay = asyncio.run(_replay_on_a_fresh_server(server, cases, args.rate, accept == "word"))
        report[label] = replay.summary()
        print(label, report[label], file=sys.stderr, flush=True)
        with open(args.out, "w") as out:
            json.dump(report, out, indent=1)


if __name__ == "__main__":
    main()
