"""Numbered ranges for training loops.

Leak analysis over a training loop compares live memory at the same point of successive
iterations: memory that grows from "iteration 3" to "iteration 4" to "iteration 5" is the
suspect. That needs the iterations to be ranges whose names say which one they are, numbered
the same way in every run, which is what `iteration` gives.
"""

from __future__ import annotations

import os
import threading
from typing import Dict, Optional

from . import _markers
from ._markers import Range

__all__ = ["iteration"]


class _Counters:
    """The next number for each name, shared by the whole process (all threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next: Dict[str, int] = {}

    def take(self, name: str) -> int:
        with self._lock:
            number = self._next.get(name, 0)
            self._next[name] = number + 1
            return number

    def reset(self, name: Optional[str]) -> None:
        with self._lock:
            if name is None:
                self._next.clear()
            else:
                self._next.pop(name, None)

    def renew_lock(self) -> None:
        # A fork while another thread held the lock would leave the child's copy held forever.
        self._lock = threading.Lock()


_counters = _Counters()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_counters.renew_lock)


class Iteration(Range):
    """A range named "<name> <n>", n counting 0, 1, 2, ... per name within the process.

    The number is taken on each entry, not on construction, so the same object works as a
    decorator of the loop body and in a ``with`` statement; ``with`` gives the number::

        for batch in loader:
            with vramtrace.iteration("step") as step:   # "step 0", "step 1", ...
                ...
    """

    __slots__ = ()

    def __enter__(self) -> int:  # type: ignore[override]
        number = _counters.take(self.name)
        if _markers._api is not None:
            self._push(f"{self.name} {number}")
        return number


class _IterationFactory:
    """`vramtrace.iteration`: call it for a numbered range; `reset` starts the count again."""

    def __call__(self, name: str = "iteration") -> Iteration:
        """A range named "<name> <n>" for the n-th entry (from 0) of any range of this name."""
        return Iteration(name)

    def reset(self, name: Optional[str] = None) -> None:
        """Makes the next iteration of `name` (of every name, if None) number 0 again: for a
        second training run in the same process, say."""
        _counters.reset(name)

    def __repr__(self) -> str:
        return "vramtrace.iteration"


iteration = _IterationFactory()
