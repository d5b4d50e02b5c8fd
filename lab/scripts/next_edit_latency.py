"""Time a next-edit answer in a 2,000-line file through `difill serve` (issue 63: p95 <= 50 ms).

The file is arrow-py/arrow's arrow/arrow.py at b247ad0 (1,903 lines) with the first lines of
arrow/parser.py after it, 2,000 lines in all (read from the mirror).  Each case types one edit
as an editor sends it (lab/next_edit_eval.py: ranged didChanges a word or a symbol at a time,
asking after each step), then times the final copilotInlineEdit round trip.  The edits are of
the kinds generalised on the tree, at lines drawn with a fixed seed:

* wrap: ``return x`` -> ``return str(x)``;
* argument: ``f(a, b)`` -> ``f(a, b, None)``;
* receiver: ``self.x`` -> ``cls.x``;
* statement: ``log.debug("here")`` added after a line of a function's body.

Run: PYTHONPATH=src .venv/bin/python -m lab.scripts.next_edit_latency [--cases-per-kind 40]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import subprocess
import sys

from lab.bench_timing import percentile
from lab.next_edit_eval import run_row
from lab.next_edit_mining import Case

MIRROR = "/work/.mirror/arrow-py+arrow/repo"
LINES = 2000


def source() -> str:
    def show(path: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", MIRROR, "show", f"b247ad0:{path}"], capture_output=True, text=True, check=True
        ).stdout

    lines = (show("arrow/arrow.py") + show("arrow/parser.py")).split("\n")[:LINES]
    return "\n".join(lines) + "\n"


def edits(text: str, kind: str, count: int, rng: random.Random) -> list[tuple[int, int, str]]:
    """``count`` edits of ``kind`` at lines drawn from ``text``, as (start, end, new text)."""
    found = []
    offset = 0
    for line in text.split("\n"):
        if kind == "wrap" and (m := re.fullmatch(r"(\s*return )([\w.]+)", line)):
            found.append((offset + m.start(2), offset + m.end(2), f"str({m.group(2)})"))
        elif kind == "argument" and (m := re.search(r"\w\(([\w., ]+)\)", line)):
            found.append((offset + m.end(1), offset + m.end(1), ", None"))
        elif kind == "receiver" and (m := re.search(r"(?<![\w.])self\.\w", line)):
            found.append((offset + m.start(), offset + m.start() + 4, "cls"))
        elif kind == "statement" and re.fullmatch(r"        \w+ = [\w.]+\(.*\)", line):
            end = offset + len(line) + 1
            found.append((end, end, '        log.debug("here")\n'))
        offset += len(line) + 1
    return rng.sample(found, min(count, len(found)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases-per-kind", type=int, default=40)
    args = parser.parse_args()
    text, rng = source(), random.Random(63)
    print(f"file: {text.count(chr(10))} lines, {len(text)} characters", file=sys.stderr)
    all_ms = []
    for kind in ("wrap", "argument", "receiver", "statement"):
        cases = [
            Case(f"{kind}-{i}", "latency", "", "arrow.py", "repeat", text, edit, text)
            for i, edit in enumerate(edits(text, kind, args.cases_per_kind, rng))
        ]
        row = asyncio.run(run_row(kind, "drafts", cases, None))
        ms = [o.ms for o in row.outcomes]
        answered = sum(o.answered for o in row.outcomes)
        all_ms += ms
        print(
            f"{kind:10s} cases {len(ms):3d}  answered {answered:3d}  "
            f"p50 {percentile(ms, 50):5.1f} ms  p95 {percentile(ms, 95):5.1f} ms  max {max(ms):5.1f} ms"
        )
    print(f"{'all':10s} cases {len(all_ms):3d}  p50 {percentile(all_ms, 50):5.1f} ms  p95 {percentile(all_ms, 95):5.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
