"""A pytest plugin that marks each test in the GPU memory trace, so that `vramtrace gate`
reports the leaks of each test apart:

    vramtrace run -o gpu.db -- pytest -p vramtrace.pytest tests/gpu
    vramtrace gate gpu.db --max-leaked-bytes 0      # lists "leaks by test"

Each test runs inside a range named "test:<node id>" (setup, call and teardown: memory a
fixture makes for the test is the test's). Outside `vramtrace run` the ranges are no-ops.
"""

from __future__ import annotations

from typing import Any, Generator

import pytest

from ._markers import Range

__all__ = ["TEST_RANGE_PREFIX"]

# The prefix `vramtrace gate` looks for (analysis/gate.h: kTestMarkerPrefix).
TEST_RANGE_PREFIX = "test:"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Generator[None, None, None]:
    with Range(TEST_RANGE_PREFIX + item.nodeid):
        yield
