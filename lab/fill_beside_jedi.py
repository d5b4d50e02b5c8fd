"""A fill's time alone and while jedi completes beside it (issue 46: jedi in a process of its own).

jedi is pure Python: on a thread of the server it held the interpreter, and a fill beside it
waited at every denoising step.  This times the shipped model's 16-slot single-line fill after the
first 200-230 lines of ``FILE`` (30 fills), then again while another thread asks jedi
(server/context/jedi_names.py, whatever runs it: a thread or its process) after ``x.`` at the end
of ``FILE`` without pause.

    PYTHONPATH=src python -m lab.fill_beside_jedi FILE   # docs/drafts.md "Round 4"
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from pathlib import Path

FILLS = 30


def fill_times(engine, lines: list[str], count: int) -> list[float]:
    from difill.engine.api import FillOptions

    times = []
    for i in range(count):
        prefix = "\n".join(lines[: 200 + i]) + "\n    return "
        started = time.perf_counter()
        engine.fill(prefix, "\n", FillOptions(max_hole_tokens=16, single_line=True))
        times.append((time.perf_counter() - started) * 1000)
    return times


def main(argv: list[str]) -> int:
    from difill.server.context import jedi_names
    from difill.server.context.jedi_names import JediNames
    from lab.quality import load_served

    path = Path(argv[0]).resolve()
    text = path.read_text()
    jedi_names.DEADLINE_S = 60.0  # each completion waited for: jedi works without pause
    engine = load_served(None).engine
    lines = text.splitlines()
    fill_times(engine, lines, 3)  # warm
    alone = fill_times(engine, lines, FILLS)
    lookup = JediNames(lambda p: False, lambda: [str(path.parent)])
    stop, completions = threading.Event(), [0]

    def ask() -> None:
        i = 0
        while not stop.is_set():
            asked = text + f"\nvalue_{i} = object()\nvalue_{i}."
            lookup.names(asked, len(asked), str(path.parent / "beside.py"))
            completions[0] += 1
            i += 1

    worker = threading.Thread(target=ask, daemon=True)
    worker.start()
    time.sleep(2)  # jedi loaded and busy
    beside = fill_times(engine, lines, FILLS)
    stop.set()
    worker.join(120)
    lookup.close(wait_s=30)
    print(
        f"a fill's p50: {statistics.median(alone):.1f} ms alone, {statistics.median(beside):.1f} ms "
        f"beside jedi ({completions[0]} completions meanwhile)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
