"""`difill bench --editor` times a warm prefix (the keystroke before cached) beside a fresh file,
for every variant, and the canvas cache's pass is timed in its steady state."""

from __future__ import annotations

from lab.bench_editor import CACHED, CONFIDENT, DIFFUSION, bench_editor, format_editor, ratios
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


def test_warm_rows_read_the_prefix_from_the_cache_and_fresh_rows_do_not(tiny_model_dir):
    report = bench_editor(str(tiny_model_dir), None, cases())
    for variant in (DIFFUSION, CACHED, CONFIDENT):
        for group in ("single_line", "multi_line"):
            fresh, warm = (report["rows"][variant][kind][group] for kind in ("fresh", "warm"))
            assert fresh["cases"] == warm["cases"] == (2 if group == "single_line" else 1)
            assert fresh["prefix_reused"] < 0.1  # a new file: nothing but <bos> to reuse
            assert warm["prefix_reused"] > 0.8  # the keystroke changed the last tokens only
            assert warm["passes"] >= 1 and warm["ms_per_pass"] > 0
    assert ratios(report) == {}  # no AR baseline named: no ratio made up
    assert "| diffusion | warm | single_line |" in format_editor(report)


def test_the_llama_cpp_row_is_fresh_then_warm_like_the_others():
    """The default engine once the worker is built: its worker keeps the last prompt, so a fresh
    row hands it another one first (a cleared cache would still hold the case's prefix)."""
    from difill.engine.native.build import build_native
    from lab.bench_editor import LLAMACPP

    build_native(log=lambda line: None)
    report = bench_editor(None, None, cases())
    for group in ("single_line", "multi_line"):
        fresh, warm = (report["rows"][LLAMACPP][kind][group] for kind in ("fresh", "warm"))
        assert fresh["prefix_reused"] < 0.1 and warm["prefix_reused"] > 0.8
        assert warm["passes"] >= 1 and warm["ms_per_pass"] > 0
