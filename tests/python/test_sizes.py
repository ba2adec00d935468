"""vramtrace._sizes: the pytest marks' sizes read as `vramtrace gate` reads them
(tests/unit/gate_test.cpp, ByteSize.*), and written as its reports write them."""

from __future__ import annotations

import unittest

from vramtrace._sizes import format_size, parse_size


class SizesTest(unittest.TestCase):
    def test_units_and_their_powers(self) -> None:
        cases = {
            "0": 0, "512": 512, "512B": 512, "2KiB": 2048, "2 MiB": 2 << 20,
            "1.5GiB": 3 << 29, "2gib": 2 << 30, "1TiB": 1 << 40, "3KB": 3000,
            "2MB": 2_000_000, "1.5GB": 1_500_000_000, "4TB": 4_000_000_000_000,
        }
        for text, size in cases.items():
            self.assertEqual(parse_size(text), size, text)
        self.assertEqual(parse_size(4096), 4096)

    def test_refuses_what_is_not_a_size(self) -> None:
        for text in ("", "-1", "MiB", "12Q", "1.5", "0x10", "1e3", "1.0000000001KiB", -1, 1.5,
                     True, None):
            with self.assertRaises(ValueError, msg=repr(text)):
                parse_size(text)  # type: ignore[arg-type]

    def test_formats_as_the_reports_do(self) -> None:
        self.assertEqual(format_size(0), "0 B")
        self.assertEqual(format_size(1023), "1023 B")
        self.assertEqual(format_size(4096), "4.0 KiB")
        self.assertEqual(format_size(3 << 29), "1.5 GiB")
        self.assertEqual(format_size(5 << 40), "5.0 TiB")


if __name__ == "__main__":
    unittest.main()
