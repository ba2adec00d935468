"""`python -m vramtrace`: what this package is, and whether this process is traced.

Recording is `vramtrace run`'s job (the native command); this entry point only answers
--version, and says whether the shim is present, which helps check an environment.
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from . import __version__, is_recording
from ._markers import _api


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m vramtrace",
        description="vramtrace's Python markers. Record with: vramtrace run -- python SCRIPT",
    )
    parser.add_argument("--version", action="version", version=f"vramtrace {__version__}")
    parser.parse_args(argv)
    if _api is None:
        print("vramtrace: the shim is not loaded: markers are no-ops in this process")
    else:
        state = "recording" if is_recording() else "not recording"
        print(f"vramtrace: the shim is loaded and {state}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
