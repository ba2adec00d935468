"""pytest tests on a real GPU with vramtrace's per-test limits, for samples/gpu/check.sh (step
11): run under `vramtrace run ... pytest -p vramtrace.pytest`, exactly test_keeps_a_tensor and
test_holds_too_much_at_once must fail, the first naming the line that made the tensor it
keeps. Without vramtrace every test passes.

    vramtrace run -o limits.db -- python -m pytest -p vramtrace.pytest samples/torch/test_gpu_limits.py
"""

import pytest
import torch

MiB = 1 << 20
KEPT = []  # what test_keeps_a_tensor leaves behind, as a module-level cache would


def floats(nbytes: int) -> torch.Tensor:
    return torch.empty(nbytes // 4, dtype=torch.float32, device="cuda")


@pytest.mark.limit_gpu_leaks("0B")
def test_keeps_a_tensor():
    KEPT.append(floats(4 * MiB))  # PLANT: kept tensor


@pytest.mark.limit_gpu_leaks("0B")
def test_frees_what_it_makes():
    x = floats(8 * MiB)
    y = x * 2
    assert y.shape == x.shape


@pytest.mark.limit_gpu_memory("16MiB")
def test_holds_too_much_at_once():
    a = floats(16 * MiB)
    b = floats(16 * MiB)  # 32 MiB of tensors live at once
    del a, b


@pytest.mark.limit_gpu_memory("64MiB")
def test_stays_under_its_peak():
    a = floats(16 * MiB)
    del a
