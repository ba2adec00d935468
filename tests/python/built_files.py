"""The built files a test needs, from the environment CTest sets (tests/python/CMakeLists.txt)."""

import os


def binary(variable: str) -> str:
    """The path in `variable`; fails the test, saying why, when it is unset or missing."""
    path = os.environ.get(variable)
    if not path:
        raise AssertionError(f"{variable} is not set: run through CTest, which sets it")
    if not os.access(path, os.R_OK):
        raise AssertionError(f"{variable}={path} does not exist: build it first")
    return path
