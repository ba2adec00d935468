"""Run by test_traced under `vramtrace run`: marks, nested ranges, three iterations, a range
left by an exception, a decorated function and a second thread. test_traced knows exactly
which markers this writes, in which order; change both together."""

import threading

import vramtrace

assert vramtrace.is_recording(), "not recording: run me under `vramtrace run`"

vramtrace.mark("start")


@vramtrace.range("load")
def load() -> None:
    vramtrace.mark("loading")


def worker() -> None:
    with vramtrace.range("worker"):
        with vramtrace.iteration("worker step"):
            vramtrace.mark("working")


with vramtrace.range("train"):
    load()
    for _ in range(3):
        with vramtrace.iteration() as i:
            with vramtrace.range("forward"):
                vramtrace.mark(f"batch {i}")
            try:
                with vramtrace.range("backward"):
                    if i == 1:
                        raise RuntimeError("left by an exception")
            except RuntimeError:
                vramtrace.mark("recovered")
    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()

vramtrace.mark("époque ✓")
print("child done")
