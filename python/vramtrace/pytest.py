"""A pytest plugin that marks each test in the GPU memory trace, so that `vramtrace gate`
reports the leaks of each test apart, and that fails a test over its GPU memory limits:

    vramtrace run -o gpu.db -- pytest -p vramtrace.pytest tests/gpu
    vramtrace gate gpu.db --max-leaked-bytes 0      # lists "leaks by test"

    @pytest.mark.limit_gpu_leaks("0B")       # nothing the test allocates may outlive it
    @pytest.mark.limit_gpu_memory("1GiB")    # nor more than 1 GiB of it be live at once
    def test_forward(model): ...

Each test runs inside a range named "test:<node id>" (setup, call and teardown: memory a
fixture makes for the test is the test's). The limits, as pytest-memray's limit_leaks and
limit_memory, judge the test function's call: what it allocated and did not free by its end
(after a garbage collection, so that cyclic garbage is not taken for a leak), and the most
of its allocations live at once. The collector answers from everything the test did, so a
test over its limits fails with the stacks of what it left live, its Python lines among
them. Outside `vramtrace run` the ranges are no-ops and the limits are not checked.
"""

from __future__ import annotations

import gc
from typing import Any, Dict, Generator, Optional

import pytest

from . import _live
from ._markers import Range, is_recording
from ._sizes import format_size, parse_size

__all__ = ["TEST_RANGE_PREFIX"]

# The prefix `vramtrace gate` looks for (analysis/gate/gate.h: kTestMarkerPrefix).
TEST_RANGE_PREFIX = "test:"

_LIMIT_MARKS = ("limit_gpu_leaks", "limit_gpu_memory")
_VERDICT = pytest.StashKey[str]() if hasattr(pytest, "StashKey") else None
_verdicts: Dict[str, str] = {}  # by node id, for pytest without Item.stash


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "limit_gpu_leaks(size): fail the test when more than `size` (\"0B\", \"16MiB\") of the "
        "GPU memory it allocated is still live at its end (vramtrace run)")
    config.addinivalue_line(
        "markers",
        "limit_gpu_memory(size): fail the test when more than `size` of the GPU memory it "
        "allocated is live at once (vramtrace run)")


def _limit(item: pytest.Item, name: str) -> Optional[int]:
    mark = item.get_closest_marker(name)
    if mark is None:
        return None
    if len(mark.args) != 1 or mark.kwargs:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{name} takes one size, "
                                f"such as {name}(\"0B\")")
    try:
        return parse_size(mark.args[0])
    except ValueError as error:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{name}: {error}") from None


def _remember(item: pytest.Item, verdict: str) -> None:
    if _VERDICT is not None:
        item.stash[_VERDICT] = verdict
    else:
        _verdicts[item.nodeid] = verdict


def _take(item: pytest.Item) -> Optional[str]:
    if _VERDICT is not None:
        return item.stash.get(_VERDICT, None)
    return _verdicts.pop(item.nodeid, None)


def _judge(leaks: Optional[int], memory: Optional[int], report: _live.LiveReport) -> str:
    broken = []
    if leaks is not None and report.live_bytes > leaks:
        broken.append(f"leaked {format_size(report.live_bytes)} ({report.live_bytes} bytes) "
                      f"of GPU memory, limit {format_size(leaks)}")
    if memory is not None and report.peak_bytes > memory:
        broken.append(f"held {format_size(report.peak_bytes)} ({report.peak_bytes} bytes) of "
                      f"GPU memory at once, limit {format_size(memory)}")
    if not broken:
        return ""
    return "vramtrace: the test " + "; ".join(broken) + "\n" + report.text


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Generator[None, None, None]:
    with Range(TEST_RANGE_PREFIX + item.nodeid):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, None]:
    leaks = _limit(item, "limit_gpu_leaks")
    memory = _limit(item, "limit_gpu_memory")
    point = _live.checkpoint() if (leaks is not None or memory is not None) else 0
    outcome = yield
    if point == 0:
        return
    failed = outcome.excinfo is not None
    if not failed:
        gc.collect()  # garbage in reference cycles is freed memory, not a leak
    try:
        report = _live.live_since(point)  # also closes the checkpoint
    except _live.LiveQueryError as error:
        if not failed and is_recording():
            _remember(item, f"vramtrace: the GPU memory limits could not be judged: {error}")
        return
    if not failed:
        verdict = _judge(leaks, memory, report)
        if verdict:
            _remember(item, verdict)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, Any, None]:
    outcome = yield
    if call.when != "call":
        return
    verdict = _take(item)
    report = outcome.get_result()
    if verdict and report.passed:
        report.outcome = "failed"
        report.longrepr = verdict
