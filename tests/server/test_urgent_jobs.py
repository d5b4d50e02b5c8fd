"""Ghost text never waits behind a long edit: the edit runs it between two of its denoising steps
(server/engine_host.py), and neither result changes for it."""

from __future__ import annotations

import asyncio
import threading

import pytest

from difill.engine.api import FillOptions, RewriteRequest, runs_jobs_between_steps
from difill.engine.infill import InfillEngine
from difill.engine.model import load_model
from difill.server.engine_host import EngineHost, Job, ModelState


def ready_host(engine) -> EngineHost:
    host = EngineHost(lambda *args: None)
    host.engine, host.state = engine, ModelState.READY
    return host


async def test_an_urgent_job_runs_between_the_steps_of_a_long_one():
    host = ready_host(object())
    urgent_done = threading.Event()
    steps_after: list[int] = []

    def long_work(job: Job):
        def work(engine):
            for step in range(400):  # a long edit: 400 steps of 5 ms
                job.before_step()
                if urgent_done.is_set():
                    steps_after.append(step)
                threading.Event().wait(0.005)
            return "edit"

        return work

    long_job = Job("file:///edit.py")
    edit = asyncio.ensure_future(host.run(long_job, long_work(long_job)))
    await asyncio.sleep(0.1)  # the edit is under way
    ghost = await host.run(Job("file:///other.py"), lambda engine: urgent_done.set() or "ghost", urgent=True)
    assert ghost == "ghost"
    assert not edit.done()  # answered while the edit still runs, not after it
    assert await edit == "edit"
    assert steps_after and steps_after[0] < 390
    host.shutdown()


async def test_an_urgent_job_runs_alone_when_nothing_else_does():
    host = ready_host(object())
    assert await host.run(Job("file:///a.py"), lambda engine: 7, urgent=True) == 7
    host.shutdown()


@pytest.fixture(params=["torch", "llamacpp"])
def engine(request, tiny_model_dir, tmp_path):
    if request.param == "torch":
        yield InfillEngine(load_model(tiny_model_dir, "cpu"))
        return
    from difill.engine.native.build import build_native
    from difill.engine.native.engine import load_llamacpp_engine
    from difill.engine.native.gguf_export import export_gguf

    build_native(log=lambda line: None)  # a no-op when current
    llama = load_llamacpp_engine(
        tiny_model_dir, export_gguf(tiny_model_dir, tmp_path / "tiny.gguf"), threads=1
    )
    yield llama
    llama.close()


async def test_a_fill_queued_during_a_rewrite_gives_both_the_results_they_give_alone(engine):
    # torch runs the fill between two of the rewrite's steps; llama.cpp's worker holds one fill's
    # state (issue 51, item 10: an interleaved fill broke the edit), so the fill waits for the rewrite.
    rewrite = RewriteRequest(
        "def area(width, height):\n    ", "total = width * height", "\n    return total\n", 0.7
    )
    rewrite_options = FillOptions(max_steps=6, seed=2)
    fill_args = (
        "import os\n\ndef main():\n    path = os.",
        "\n",
        FillOptions(max_hole_tokens=8, max_steps=4),
    )
    alone_rewrite = engine.rewrite(rewrite, rewrite_options)
    alone_fill = engine.fill(*fill_args)

    host = ready_host(engine)
    long_job = Job("file:///edit.py")
    started = threading.Event()

    rewrite_done = threading.Event()
    fill_ran_during_rewrite: list[bool] = []

    def slow_rewrite(engine):
        started.set()
        result = engine.rewrite(rewrite, rewrite_options, long_job.before_step)
        rewrite_done.set()
        return result

    def ghost_fill(engine):
        fill_ran_during_rewrite.append(not rewrite_done.is_set())
        return engine.fill(*fill_args)

    # Hold the third step until the fill is queued, so it must run inside the rewrite, after the
    # rewrite's prompt and two of its steps are in the engine's state.
    original = long_job.before_step
    queued = threading.Event()
    checks = [0]

    def before_step() -> bool:
        checks[0] += 1
        if checks[0] == 3:
            queued.wait(10)
        return original()

    long_job.before_step = before_step  # type: ignore[method-assign]
    edit = asyncio.ensure_future(host.run(long_job, slow_rewrite))
    await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
    ghost = asyncio.ensure_future(host.run(Job("file:///other.py"), ghost_fill, urgent=True))
    await asyncio.sleep(0.05)
    queued.set()
    nested_fill, nested_rewrite = await ghost, await edit
    assert fill_ran_during_rewrite == [runs_jobs_between_steps(engine)]
    assert [c.text for c in nested_fill.candidates] == [c.text for c in alone_fill.candidates]
    assert nested_rewrite.text == alone_rewrite.text
    host.shutdown()
