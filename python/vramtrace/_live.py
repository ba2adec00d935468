"""Live queries: what this process allocated since a checkpoint and still holds, as the
collector sees it (vramtrace_checkpoint and vramtrace_live_since in vramtrace.h).

The answer is exact: the question travels in the recording after every event before it, and
the collector answers once it has read them all, so asking waits while it catches up.
"""

from __future__ import annotations

from typing import NamedTuple

from . import _markers
from ._shim import LiveSummary, ctypes

__all__ = ["LiveReport", "LiveQueryError", "checkpoint", "live_since"]

# How long a query may wait for the collector: a test's end waits behind every event the
# test made, which a busy collector may take a while to read.
DEFAULT_TIMEOUT_S = 120.0
_REPORT_BYTES = 64 * 1024 + 1


class LiveQueryError(RuntimeError):
    """The collector could not answer (vramtrace_live_since returned a negative status)."""


class LiveReport(NamedTuple):
    live_bytes: int   # allocated after the checkpoint and live now
    live_count: int
    peak_bytes: int   # the most of those bytes live at once since the checkpoint
    block_level: bool  # counted at the caching allocator's block level (PyTorch)
    text: str          # the largest live stacks, one frame a line


def checkpoint() -> int:
    """A checkpoint to ask about later; 0 when this process is not recorded (or the shim has
    no live queries), and asking about 0 is an error."""
    api = _markers._api
    if api is None or api.checkpoint is None:
        return 0
    return int(api.checkpoint())


def live_since(point: int, timeout_s: float = DEFAULT_TIMEOUT_S) -> LiveReport:
    """What was allocated since checkpoint `point` and is live now; closes the checkpoint.

    Raises LiveQueryError when there is no answer (not recorded, the collector gone or too
    slow, or an unknown checkpoint)."""
    api = _markers._api
    if api is None or api.live_since is None or ctypes is None:
        raise LiveQueryError("this process is not recorded by vramtrace")
    summary = LiveSummary()
    report = ctypes.create_string_buffer(_REPORT_BYTES)
    status = api.live_since(point, ctypes.byref(summary), report, _REPORT_BYTES,
                            int(timeout_s * 1000))
    if status < 0:
        why = {
            -1: "this process is not recorded by vramtrace (or the checkpoint is 0)",
            -2: f"the collector did not answer within {timeout_s:g} s",
            -3: "the collector does not know the checkpoint (already asked about, or dropped)",
            -4: "the collector went away before it answered (killed, or it stopped recording)",
        }.get(status, f"status {status}")
        raise LiveQueryError(why)
    return LiveReport(summary.live_bytes, summary.live_count, summary.peak_bytes,
                      bool(summary.block_level), report.value.decode("utf-8", "replace"))
