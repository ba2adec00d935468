"""Sizes as people write them: "0", "512B", "1.5GiB", "2 MB" (the units of `vramtrace gate`,
analysis/values/byte_size.h: B, KiB, MiB, GiB, TiB as powers of 1024; KB, MB, GB, TB as powers of
1000; any case)."""

from __future__ import annotations

import re
from typing import Union

__all__ = ["parse_size", "format_size"]

_UNITS = {
    "": 1, "b": 1,
    "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")


def parse_size(size: Union[int, str]) -> int:
    """Bytes; raises ValueError for what is not a size (a fraction of a byte included)."""
    if isinstance(size, bool) or not isinstance(size, (int, str)):
        raise ValueError(f"{size!r} is not a size (such as 0, 512MiB, 2GB)")
    if isinstance(size, int):
        if size < 0:
            raise ValueError(f"{size!r} is not a size (such as 0, 512MiB, 2GB)")
        return size
    match = _SIZE.fullmatch(size)
    unit = _UNITS.get(match.group(2).lower()) if match else None
    if match is None or unit is None:
        raise ValueError(f"{size!r} is not a size (such as 0, 512MiB, 2GB)")
    number = match.group(1)
    whole, _, fraction = number.partition(".")
    if fraction and unit == 1:
        raise ValueError(f"{size!r} is not a whole number of bytes")
    # Exact arithmetic: 1.5GiB is 1610612736, not a float's idea of it.
    scale = 10 ** len(fraction)
    bytes_times_scale = (int(whole) * scale + int(fraction or "0")) * unit
    if bytes_times_scale % scale:
        raise ValueError(f"{size!r} is not a whole number of bytes")
    return bytes_times_scale // scale


def format_size(size: int) -> str:
    """512 B, 1.5 KiB, 12.0 MiB: binary units, one decimal, as vramtrace's reports write them."""
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024.0
        if value < 1024.0 or unit == "TiB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")
