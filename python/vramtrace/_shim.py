"""Finding the shim's C API in this process.

`vramtrace run` preloads the shim (libvramtrace_preload.so) into the program, so when this
process is being traced the shim's symbols are already in the global namespace, and
``ctypes.CDLL(None)`` (``dlopen(NULL)``) reaches them without loading anything. When they are
absent the program runs untraced, and this package must cost nearly nothing; so this module
never loads the shim itself: loading it outside `vramtrace run` would start a recorder with no
collector to talk to.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional

try:
    import ctypes
except ImportError:  # Python built without libffi: no way to call C, so always untraced.
    ctypes = None  # type: ignore[assignment]

__all__ = ["CApi", "LiveSummary", "find_c_api"]


class LiveSummary(ctypes.Structure if ctypes is not None else object):  # type: ignore[misc]
    """vramtrace_live_summary of vramtrace.h."""

    if ctypes is not None:
        _fields_ = [
            ("live_bytes", ctypes.c_ulonglong),
            ("live_count", ctypes.c_ulonglong),
            ("peak_bytes", ctypes.c_ulonglong),
            ("block_level", ctypes.c_int),
        ]


class CApi(NamedTuple):
    """The functions of preload/include/vramtrace/vramtrace.h, callable from Python.

    Names are passed as bytes (the caller encodes them as UTF-8). The live queries
    (checkpoint, live_since) are None with a shim that predates them.
    """

    mark: Callable[[bytes], None]
    range_push: Callable[[bytes], int]
    range_pop: Callable[[], int]
    is_recording: Callable[[], int]
    checkpoint: Optional[Callable[[], int]] = None
    live_since: Optional[Callable[..., int]] = None


def find_c_api() -> Optional[CApi]:
    """The shim's C API if the shim is loaded in this process, else None.

    All four symbols must be there: a partial set is not the shim (or not one this package
    knows), and half-working markers would be worse than none. Never raises.
    """
    if ctypes is None:
        return None
    try:
        process = ctypes.CDLL(None)
        mark = process.vramtrace_mark
        range_push = process.vramtrace_range_push
        range_pop = process.vramtrace_range_pop
        is_recording = process.vramtrace_is_recording
    except (AttributeError, OSError):
        return None

    mark.argtypes = [ctypes.c_char_p]
    mark.restype = None
    range_push.argtypes = [ctypes.c_char_p]
    range_push.restype = ctypes.c_int
    range_pop.argtypes = []
    range_pop.restype = ctypes.c_int
    is_recording.argtypes = []
    is_recording.restype = ctypes.c_int
    checkpoint = getattr(process, "vramtrace_checkpoint", None)
    live_since = getattr(process, "vramtrace_live_since", None)
    if checkpoint is None or live_since is None:
        return CApi(mark, range_push, range_pop, is_recording)
    checkpoint.argtypes = []
    checkpoint.restype = ctypes.c_ulonglong
    live_since.argtypes = [ctypes.c_ulonglong, ctypes.POINTER(LiveSummary), ctypes.c_char_p,
                           ctypes.c_ulong, ctypes.c_int]
    live_since.restype = ctypes.c_long
    return CApi(mark, range_push, range_pop, is_recording, checkpoint, live_since)
