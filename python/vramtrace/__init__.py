"""vramtrace's markers for Python programs: marks, ranges and numbered iterations.

They give a GPU memory trace its phases ("iteration 3", "forward", "optimizer step") so that
reports can say what was live at each point. They reach the trace through the C API of the
shim that `vramtrace run` preloads; in a process not run under `vramtrace run` every call is
a cheap no-op, so they can stay in production code. Standard library only.

    import vramtrace

    for batch in loader:
        with vramtrace.iteration():          # "iteration 0", "iteration 1", ...
            with vramtrace.range("forward"):
                loss = model(batch)
            vramtrace.mark("backward")
            loss.backward()
"""

from ._iteration import Iteration, iteration
from ._live import LiveQueryError, LiveReport, checkpoint, live_since
from ._markers import Range, is_recording, mark

__version__ = "0.1.0"

# `vramtrace.range(name)` reads as what it does; the class keeps a conventional name.
range = Range  # noqa: A001 (shadows the builtin inside this module only)

__all__ = ["mark", "range", "iteration", "is_recording", "Range", "Iteration", "checkpoint",
           "live_since", "LiveReport", "LiveQueryError", "__version__"]
