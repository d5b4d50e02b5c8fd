"""How many edits the model proposes that pass the edit gate (issue 60, item 2; docs/edits.md).

On files of the tuning packages (``lab/training/tuning_packages.txt``: in neither the corpus nor
the eval's workspaces), each command is asked ``--cases`` times, in process through the server's
own edit path (``engine_work``, ``new_selection``, then the gate, ``check_shown``) with default
settings:

* rewrite: two whole lines of a function body, strength 0.5;
* instruction: the same kind of selection with an instruction (``INSTRUCTIONS``), strength 0.5;
* fill holes: one line with one name on it replaced by the hole marker;
* complete block: a function's body replaced by ``pass``, the ``pass`` selected.

Per command: requests, proposals (the model changed the selection), and how many passed the
gate.  ``--dump FILE`` writes each passing edit (before and after) for a reader to judge.

    python -m lab.edit_gate_eval --cache /opt/pypi/files --cases 20 [--model DIR] [--dump FILE]

The wheels are read from ``--cache`` (``{name}-{version}-*.whl``); a pin without one is skipped.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from lab.training.corpus import is_wanted, package_path
from lab.training.corpus_sources import TUNING_PACKAGE_LIST, Archive, archive_members, read_pins

COMMANDS = ("rewrite", "instruction", "fillHoles", "completeBlock")
INSTRUCTIONS = (
    "add type hints",
    "add a docstring",
    "simplify this",
    "use a list comprehension",
    "add error handling",
)
MARKER = "<|hole|>"
NAME = re.compile(r"[A-Za-z_]\w{2,}")


@dataclass(frozen=True)
class Case:
    command: str
    path: str
    text: str  # the document
    start: int
    end: int
    instruction: str | None = None
    hole: str | None = None  # what the hole replaced (fill holes), for the reader


def tuning_files(cache: Path) -> list[tuple[str, str]]:
    """(path, text) of the tuning packages' Python files whose wheel is in ``cache``."""
    files = []
    for pin in read_pins(TUNING_PACKAGE_LIST):
        wheels = sorted(cache.glob(f"{pin.name}-{pin.version}-*.whl"))
        if not wheels:
            print(f"skipped {pin.name}=={pin.version}: no wheel in {cache}")
            continue
        for member, data in archive_members(Archive(pin, wheels[0].name, "", wheels[0])):
            rel = package_path(member)
            if is_wanted(rel, len(data)):
                files.append((f"{pin.name}=={pin.version}/{rel}", data.decode("utf-8", "replace")))
    return files


def functions(text: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Functions whose body starts on a line of its own (after a docstring, if any)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.body[0].lineno > node.lineno:
            found.append(node)
    return found


def line_offsets(text: str) -> list[int]:
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def case_for(command: str, path: str, text: str, rng: random.Random) -> Case | None:
    """One case of ``command`` in ``text``; None when the drawn function does not fit."""
    found = functions(text)
    if not found:
        return None
    function = rng.choice(found)
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body:
        return None
    starts = line_offsets(text)
    decorators = getattr(body[0], "decorator_list", [])  # a decorated statement starts at its first one
    first = min([body[0].lineno, *(d.lineno for d in decorators)]) - 1
    last = (function.end_lineno or function.lineno) - 1
    if command == "completeBlock":
        indent = text[starts[first] : starts[first + 1]][: body[0].col_offset]
        stub = text[: starts[first]] + indent + "pass\n" + text[starts[last + 1] :]
        return Case(command, path, stub, starts[first] + len(indent), starts[first] + len(indent) + 4)
    lines = [i for i in range(first, last + 1) if text[starts[i] : starts[i + 1]].strip()]
    if command == "fillHoles":
        line = rng.choice(lines)
        names = list(NAME.finditer(text, starts[line], starts[line + 1]))
        if not names:
            return None
        name = rng.choice(names)
        holed = text[: name.start()] + MARKER + text[name.end() :]
        end = starts[line + 1] - len(name.group()) + len(MARKER)
        return Case(command, path, holed, starts[line], end, hole=name.group())
    pairs = [i for i in lines if i + 1 in lines]
    if not pairs:
        return None
    line = rng.choice(pairs)
    instruction = rng.choice(INSTRUCTIONS) if command == "instruction" else None
    return Case(command, path, text, starts[line], starts[line + 2], instruction)


def draw_cases(files: list[tuple[str, str]], per_command: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for command in COMMANDS:
        drawn: list[Case] = []
        while len(drawn) < per_command:
            path, text = rng.choice(files)
            case = case_for(command, path, text, rng)
            if case is not None:
                drawn.append(case)
        cases += drawn
    return cases


def run_case(engine, case: Case) -> dict:
    """What the server would do with ``case``: the new text, or why there is none."""
    from difill.server.config import Settings
    from difill.server.documents import Document
    from difill.server.features.edits.selection import (
        COMPLETE_BLOCK,
        FILL_HOLES,
        REWRITE,
        EditError,
        EditRequest,
        HeldBack,
        check_shown,
        engine_work,
        new_selection,
    )
    from difill.server.trees import SyntaxTrees

    kind = {"fillHoles": FILL_HOLES, "completeBlock": COMPLETE_BLOCK}.get(case.command, REWRITE)
    settings, trees = Settings(), SyntaxTrees()
    document = Document(f"file:///{case.path}", "python", 1, case.text)
    request = EditRequest(kind, document.uri, 1, case.start, case.end, case.instruction)
    selection = case.text[case.start : case.end]
    row = {"command": case.command, "path": case.path, "instruction": case.instruction, "hole": case.hole,
           "before": selection}  # fmt: skip
    try:
        result = engine_work(request, document, settings, trees, lambda: False, None)(engine)
        new = new_selection(request, document, result, settings, trees)
    except EditError as err:
        return {**row, "outcome": "none", "why": str(err)}
    row["after"] = new
    if new == selection:
        return {**row, "outcome": "unchanged"}
    try:
        check_shown(request, document, new, settings, trees)
    except HeldBack as held:
        return {**row, "outcome": "held back", "why": held.reasons}
    return {**row, "outcome": "passed"}


def summary(rows: list[dict]) -> dict[str, dict[str, int]]:
    table = {}
    for command in COMMANDS:
        mine = [r for r in rows if r["command"] == command]
        table[command] = {
            "requests": len(mine),
            "proposals": sum(r["outcome"] in ("held back", "passed") for r in mine),
            "passed": sum(r["outcome"] == "passed" for r in mine),
        }
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="model directory (default: the shipped one)")
    parser.add_argument("--cache", default="data/archives", help="where the tuning packages' wheels are")
    parser.add_argument("--cases", type=int, default=20, help="requests per command")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dump", help="write every case and its outcome here (JSON lines)")
    args = parser.parse_args(argv)

    from difill.engine.infill import InfillEngine
    from difill.engine.model import load_model

    files = tuning_files(Path(args.cache))
    if not files:
        parser.error(f"no tuning package wheel in {args.cache}")
    engine = InfillEngine(load_model(args.model, device="cpu"))
    rows = []
    for case in draw_cases(files, args.cases, args.seed):
        rows.append(run_case(engine, case))
        print(f"{case.command:14} {rows[-1]['outcome']:10} {case.path}", flush=True)
    if args.dump:
        Path(args.dump).write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(json.dumps(summary(rows), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
