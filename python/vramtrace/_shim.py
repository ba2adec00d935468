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

__all__ = ["CApi", "find_c_api"]


class CApi(NamedTuple):
    """The four functions of preload/include/vramtrace/vramtrace.h, callable from Python.

    Names are passed as bytes (the caller encodes them as UTF-8).
    """

    mark: Callable[[bytes], None]
    range_push: Callable[[bytes], int]
    range_pop: Callable[[], int]
    is_recording: Callable[[], int]


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
    return CApi(mark, range_push, range_pop, is_recording)
