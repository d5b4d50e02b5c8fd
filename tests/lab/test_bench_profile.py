"""`difill bench --profile` accounts for a fill's time part by part, and leaves the engine as it found it."""

from __future__ import annotations

import difill.engine.infill as infill_module
import difill.server.suggestion_path as path_module
from difill.engine.infill import InfillEngine
from difill.engine.sampler import denoise
from difill.server.config import Settings
from difill.server.suggestion_path import ServedModel
from lab.bench_profile import REQUEST_PARTS, profile_served
from lab.profile_hooks import STEP_PARTS
from lab.training.examples import InfillExample

FILE = "".join(f"def f{i}(x):\n    y = x * {i}\n    return y + {i}\n\n\n" for i in range(6))


def cases() -> dict[str, list[InfillExample]]:
    cut = FILE.index("    y = x * 3")
    line_end = FILE.index("\n", cut) + 1
    block_end = FILE.index("\n\n", cut) + 1
    return {
        "rest_of_line": [InfillExample(FILE[: cut + 8], [FILE[cut + 8 : line_end - 1]], [], FILE[line_end - 1 :], "rest_of_line")],
        "whole_line": [InfillExample(FILE[:cut], [FILE[cut:line_end]], [], FILE[line_end:], "whole_line")],
        "multi_line_2_5": [InfillExample(FILE[:cut], [FILE[cut:block_end]], [], FILE[block_end:], "multi_line_2_5")],
    }  # fmt: skip


def test_profile_parts_add_up_to_each_request_and_the_engine_is_restored(loaded):
    engine = InfillEngine(loaded)
    served = ServedModel(engine, Settings(context_drafts="off"))  # the model answers every request
    report = profile_served(served, cases())
    timed = report.pop("_untimed")
    assert len(timed) == 6 and report["cases"] == 3
    for kind in ("fill", "keystroke"):
        table = report[kind]
        assert table["_requests"] == 3  # drafts are off: the model ran for each
        assert set(REQUEST_PARTS) <= set(table)
        # "other" is the total less every timed part: the shares add up to the whole, and no
        # part is counted twice (that would push the timed parts past the total, other at 0)
        assert abs(sum(table[part]["share"] for part in REQUEST_PARTS) - 1) < 0.01
        assert table["other"]["share"] < 0.1
    per_pass = report["per_pass"]
    for part in ("attention", "MLP", "MoE", "LM head", "self-conditioning input", "sampler"):
        assert per_pass[part]["ms"] > 0, part
    assert abs(sum(per_pass[part]["share"] for part in STEP_PARTS) - 1) < 0.01
    assert 0 < per_pass["_open_slots"] <= per_pass["_slots"]
    rows = report["passes"]
    assert sum(row["fills"] for row in rows) == 3
    for row in rows:
        if row.get("settled_mean") is not None:
            assert 1 <= row["settled_mean"] <= row["passes_mean"]
    # nothing of the profile stays behind: the engine's own methods, no hooks, the real loop
    assert "fill" not in vars(engine) and "_decoder" not in vars(engine)
    assert "encode" not in vars(engine.prefix_cache)
    assert infill_module.denoise is denoise
    assert path_module.shown_texts.__module__ == "difill.text.pipeline"
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in loaded.model.modules())
