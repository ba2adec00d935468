"""The package's side of the C API, against a fake that records calls as the shim would be
called: names as UTF-8 bytes, one pop per accepted push (also on exceptions), per-thread
nesting, and the C API's lookup itself."""

from __future__ import annotations

import ctypes
import threading
import unittest
from typing import List, Optional, Tuple
from unittest import mock

import vramtrace
from vramtrace import _live, _markers, _shim


class FakeCApi:
    """Records calls per thread; nests like the shim (a push's level is the depth before it)."""

    def __init__(self, recording: int = 1, refuse_push_at: Optional[int] = None) -> None:
        self.calls: List[Tuple[str, str, Optional[bytes]]] = []
        self.recording = recording
        self.refuse_push_at = refuse_push_at
        self._depth = threading.local()
        self._lock = threading.Lock()

    def _log(self, call: str, name: Optional[bytes]) -> None:
        with self._lock:
            self.calls.append((threading.current_thread().name, call, name))

    def depth(self) -> int:
        return getattr(self._depth, "value", 0)

    def mark(self, name: bytes) -> None:
        self._log("mark", name)

    def range_push(self, name: bytes) -> int:
        level = self.depth()
        if level == self.refuse_push_at:
            return -1
        self._depth.value = level + 1
        self._log("push", name)
        return level

    def range_pop(self) -> int:
        if self.depth() == 0:
            return -1
        self._depth.value = self.depth() - 1
        self._log("pop", None)
        return self._depth.value

    def is_recording(self) -> int:
        return self.recording

    def api(self) -> _shim.CApi:
        return _shim.CApi(self.mark, self.range_push, self.range_pop, self.is_recording)

    def on(self, thread: str = "MainThread") -> List[Tuple[str, Optional[bytes]]]:
        return [(call, name) for t, call, name in self.calls if t == thread]


class WithFakeCApi(unittest.TestCase):
    def install(self, fake: FakeCApi) -> FakeCApi:
        previous = _markers._use_api_for_testing(fake.api())
        self.addCleanup(_markers._use_api_for_testing, previous)
        vramtrace.iteration.reset()
        self.addCleanup(vramtrace.iteration.reset)
        return fake

    def test_mark_passes_utf8(self) -> None:
        fake = self.install(FakeCApi())
        vramtrace.mark("step")
        vramtrace.mark("époque ✓")
        vramtrace.mark("")
        vramtrace.mark(b"raw \xff")  # type: ignore[arg-type]
        vramtrace.mark(7)  # type: ignore[arg-type]
        vramtrace.mark("lone \udc80, pair \ud83d\ude00")
        self.assertEqual(fake.on(), [
            ("mark", b"step"), ("mark", "époque ✓".encode()), ("mark", b""),
            ("mark", b"raw \xff"), ("mark", b"7"),
            ("mark", "lone \ufffd, pair \U0001f600".encode()),
        ])

    def test_is_recording_follows_the_shim(self) -> None:
        fake = self.install(FakeCApi(recording=1))
        self.assertIs(vramtrace.is_recording(), True)
        fake.recording = 0
        self.assertIs(vramtrace.is_recording(), False)

    def test_ranges_push_and_pop_in_order(self) -> None:
        fake = self.install(FakeCApi())
        with vramtrace.range("outer"):
            with vramtrace.range("inner"):
                vramtrace.mark("in")
        self.assertEqual(fake.on(), [("push", b"outer"), ("push", b"inner"), ("mark", b"in"),
                                     ("pop", None), ("pop", None)])
        self.assertEqual(fake.depth(), 0)

    def test_range_pops_on_exception(self) -> None:
        fake = self.install(FakeCApi())
        with vramtrace.range("outer"):
            with self.assertRaises(RuntimeError):
                with vramtrace.range("failing"):
                    raise RuntimeError
            self.assertEqual(fake.depth(), 1)
            vramtrace.mark("after")
        self.assertEqual(fake.on(), [("push", b"outer"), ("push", b"failing"), ("pop", None),
                                     ("mark", b"after"), ("pop", None)])

    def test_decorator_pushes_per_call(self) -> None:
        fake = self.install(FakeCApi())

        @vramtrace.range("step")
        def step(fail: bool) -> None:
            if fail:
                raise ValueError

        step(False)
        with self.assertRaises(ValueError):
            step(True)
        self.assertEqual(fake.on(), [("push", b"step"), ("pop", None)] * 2)

    def test_iteration_names(self) -> None:
        fake = self.install(FakeCApi())
        for _ in range(3):
            with vramtrace.iteration():
                with vramtrace.iteration("époque"):
                    pass
        vramtrace.iteration.reset("époque")
        with vramtrace.iteration("époque"):
            pass
        pushed = [name for call, name in fake.on() if call == "push"]
        self.assertEqual(pushed, [b"iteration 0", "époque 0".encode(), b"iteration 1",
                                  "époque 1".encode(), b"iteration 2", "époque 2".encode(),
                                  "époque 0".encode()])
        self.assertEqual(fake.depth(), 0)

    def test_refused_push_is_not_popped(self) -> None:
        # A push the shim refuses (-1) opened nothing: popping for it would close the
        # enclosing range instead.
        fake = self.install(FakeCApi(refuse_push_at=1))
        with vramtrace.range("outer"):
            with vramtrace.range("refused"):
                pass
            self.assertEqual(fake.depth(), 1)
        self.assertEqual(fake.on(), [("push", b"outer"), ("pop", None)])

    def test_ranges_nest_per_thread(self) -> None:
        fake = self.install(FakeCApi())
        shared = vramtrace.range("shared")
        inside = threading.Event()
        release = threading.Event()

        def worker() -> None:
            with shared:
                inside.set()
                release.wait()

        thread = threading.Thread(target=worker, name="worker")
        with shared:
            thread.start()
            inside.wait()
            with vramtrace.range("main inner"):
                pass
        release.set()
        thread.join()
        self.assertEqual(fake.on(), [("push", b"shared"), ("push", b"main inner"),
                                     ("pop", None), ("pop", None)])
        self.assertEqual(fake.on("worker"), [("push", b"shared"), ("pop", None)])


class CApiLookupTest(unittest.TestCase):
    def test_absent_symbols_mean_no_api(self) -> None:
        self.assertIsNone(_shim.find_c_api())

    def test_found_symbols_get_c_signatures(self) -> None:
        # Any library's functions stand in for the shim's: only the lookup is tested here.
        class Process:
            def __init__(self) -> None:
                libc = ctypes.CDLL(None)
                self.vramtrace_mark = libc.puts
                self.vramtrace_range_push = libc.strlen
                self.vramtrace_range_pop = libc.getpid
                self.vramtrace_is_recording = libc.getppid

        process = Process()
        with mock.patch.object(_shim.ctypes, "CDLL", lambda _: process):
            api = _shim.find_c_api()
        self.assertIsNotNone(api)
        assert api is not None
        self.assertEqual(api.mark.argtypes, [ctypes.c_char_p])
        self.assertIsNone(api.mark.restype)
        self.assertEqual(api.range_push.argtypes, [ctypes.c_char_p])
        self.assertIs(api.range_push.restype, ctypes.c_int)
        self.assertEqual(api.range_push(b"four"), 4)
        self.assertEqual(api.range_pop.argtypes, [])
        self.assertIs(api.is_recording.restype, ctypes.c_int)

    def test_a_partial_set_is_not_the_shim(self) -> None:
        class Process:
            vramtrace_mark = ctypes.CDLL(None).puts

        with mock.patch.object(_shim.ctypes, "CDLL", lambda _: Process()):
            self.assertIsNone(_shim.find_c_api())


class LiveQueryAnswers(unittest.TestCase):
    """What each status of vramtrace_live_since() says to the person whose test was judged."""

    def ask(self, status: int) -> str:
        def live_since(point, summary, report, size, timeout_ms) -> int:  # noqa: ANN001
            return status

        fake = FakeCApi().api()._replace(checkpoint=lambda: 1, live_since=live_since)
        previous = _markers._use_api_for_testing(fake)
        self.addCleanup(_markers._use_api_for_testing, previous)
        with self.assertRaises(_live.LiveQueryError) as raised:
            _live.live_since(1, timeout_s=120)
        return str(raised.exception)

    def test_a_collector_gone_is_not_a_collector_slow(self) -> None:
        # -4 comes at once: "did not answer within 120 s" would be false, and send the reader
        # looking for a slow collector.
        self.assertIn("went away", self.ask(-4))
        self.assertNotIn("120", self.ask(-4))
        self.assertIn("did not answer within 120 s", self.ask(-2))
        self.assertIn("does not know the checkpoint", self.ask(-3))


if __name__ == "__main__":
    unittest.main()
