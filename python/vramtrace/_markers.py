"""Marks and ranges: the Python face of vramtrace_mark and vramtrace_range_push/pop.

The C API is looked up once, when this module is imported (the shim, when present, was
preloaded before Python started, so it cannot appear later). Every call then checks one
module global: when the shim is absent that is all it costs, so markers can stay in
production code.
"""

from __future__ import annotations

import functools
import threading
from types import TracebackType
from typing import Any, Callable, List, Optional, Type, TypeVar

from ._shim import CApi, find_c_api

__all__ = ["mark", "is_recording", "Range"]

_F = TypeVar("_F", bound=Callable[..., Any])

# The shim's functions, or None when this process is not traced.
_api: Optional[CApi] = find_c_api()


def _encode(name: object) -> bytes:
    """The name as the C API wants it: UTF-8 bytes.

    Markers must never fail the program, so anything is accepted: bytes go through as they
    are (the shim makes them valid UTF-8), other objects are converted with str(), and lone
    surrogates become U+FFFD, as the shim does for bytes that are not UTF-8. A NUL ends the
    name (it is a C string), and the shim cuts names at 255 bytes.
    """
    if not isinstance(name, str):
        if isinstance(name, (bytes, bytearray, memoryview)):
            return bytes(name)
        name = str(name)
    try:
        return name.encode("utf-8")
    except UnicodeEncodeError:
        # Joins surrogate pairs that arrived split (from JSON, say); lone ones become U+FFFD.
        return name.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode()


def mark(name: str) -> None:
    """Records an instant named `name` on this thread's timeline.

    A no-op when the process is not run under `vramtrace run`.
    """
    api = _api
    if api is not None:
        api.mark(_encode(name))


def is_recording() -> bool:
    """True when the shim is loaded and recording this process for a collector.

    Asked of the shim on every call: recording stops if the collector goes away. Markers
    need no such check (they are no-ops when not recording); this is for programs that want
    to skip work that only matters when traced.
    """
    api = _api
    return api is not None and api.is_recording() != 0


class _ThreadRanges(threading.local):
    """Per thread, for each range this package opened and has not closed yet: whether the
    shim accepted its push. The shim nests ranges per thread, so this must be per thread too.
    """

    def __init__(self) -> None:
        self.pushed: List[bool] = []


_thread_ranges = _ThreadRanges()


class Range:
    """A span of this thread's timeline: pushed on enter, popped on exit, also when the body
    raises (the exception propagates).

    Usable as a context manager::

        with vramtrace.range("forward"):
            ...

    and as a decorator, which wraps each call::

        @vramtrace.range("optimizer step")
        def step(): ...

    (A decorated generator or coroutine function is in the range only while it creates the
    generator or coroutine, not while that runs: use ``with`` inside it instead.)

    One object may be entered several times, nested or from several threads: it keeps no
    per-entry state of its own. Ranges nest per thread, like the C API's: a range must be
    exited on the thread that entered it, and asyncio tasks that interleave on one thread
    interleave their ranges too.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _push(self, name: str) -> None:
        api = _api
        if api is not None:
            # -1: the shim could not track it (too deep); then there is nothing to pop, and
            # popping anyway would close the enclosing range instead.
            _thread_ranges.pushed.append(api.range_push(_encode(name)) >= 0)

    def __enter__(self) -> "Range":
        if _api is not None:  # checked here too: untraced, a range costs two cheap calls
            self._push(self.name)
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> bool:
        api = _api
        if api is not None:
            pushed = _thread_ranges.pushed
            if pushed and pushed.pop():
                api.range_pop()
        return False

    def __call__(self, function: _F) -> _F:
        @functools.wraps(function)
        def in_range(*args: Any, **kwargs: Any) -> Any:
            with self:
                return function(*args, **kwargs)

        return in_range  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def _use_api_for_testing(api: Optional[CApi]) -> Optional[CApi]:
    """Replaces the C API (None: untraced); returns the previous one. For tests only."""
    global _api
    previous, _api = _api, api
    _thread_ranges.pushed.clear()
    return previous
