"""The Triton gather kernels equal their torch references: on the CPU under TRITON_INTERPRET=1, on CUDA compiled.

The interpreted copy of the kernel module is loaded under a private name with TRITON_INTERPRET=1 set
only while it is imported, so GPU tests in the same process still get compiled kernels.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("triton")

from tests.interpreted import load_interpreted

kernels = load_interpreted("memory/features/_triton_kernels.py")
DTYPES = [torch.float32, torch.float16]


def test_kernels_really_are_interpreted() -> None:
    from triton.runtime.interpreter import InterpretedFunction

    assert isinstance(kernels.gather_rows_aligned_kernel, InterpretedFunction)


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(1, 12),
    dim=st.integers(1, 70),
    num_ids=st.integers(0, 6),
    dtype=st.sampled_from(DTYPES),
    aligned=st.booleans(),
    offset=st.integers(0, 40),
    seed=st.integers(0, 2**16),
)
def test_gather_kernels_equal_reference(
    rows: int, dim: int, num_ids: int, dtype: torch.dtype, aligned: bool, offset: int, seed: int
) -> None:
    generator = torch.Generator().manual_seed(seed)
    storage = torch.randn(rows * dim + offset, generator=generator).to(dtype)
    table = storage[offset:].view(rows, dim)  # a start that is not on a 128-byte line
    ids = torch.randint(0, rows, (num_ids,), generator=generator)
    out = torch.full((num_ids, dim), -3.0, dtype=dtype)
    kernels.gather_rows_triton(table, ids, out, aligned=aligned)
    assert torch.equal(out, kernels.gather_rows_reference(table, ids))


@settings(max_examples=20, deadline=None)
@given(
    rows=st.integers(1, 16),
    dim=st.integers(1, 40),
    num_ids=st.integers(0, 8),
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**16),
)
def test_tiered_kernel_equals_reference(rows: int, dim: int, num_ids: int, dtype: torch.dtype, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    table = torch.randn(rows, dim, generator=generator).to(dtype)
    local_rows = int(torch.randint(0, rows + 1, (1,), generator=generator))
    host_start = int(torch.randint(local_rows, rows + 1, (1,), generator=generator))
    host_end = int(torch.randint(host_start, rows + 1, (1,), generator=generator))
    local, host = table[:local_rows].clone(), table[host_start:host_end].clone()
    ids = torch.randint(0, rows, (num_ids,), generator=generator)
    positions = torch.randperm(num_ids, generator=generator)
    out = torch.full((num_ids, dim), -3.0, dtype=dtype)
    expected = out.clone()
    kernels.tiered_gather_triton(local, host, ids, positions, out, host_start=host_start)
    kernels.tiered_gather_reference(local, host, ids, positions, expected, host_start=host_start)
    assert torch.equal(out, expected)


def test_launcher_rejects_bad_arguments() -> None:
    table = torch.zeros(4, 3)
    with pytest.raises(ValueError, match="int64"):
        kernels.gather_rows_triton(table, torch.tensor([0], dtype=torch.int32), torch.empty(1, 3))
    with pytest.raises(ValueError, match="out"):
        kernels.gather_rows_triton(table, torch.tensor([0]), torch.empty(1, 3, dtype=torch.float16))


requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.gpu
@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [1, 32, 100, 513])
def test_compiled_kernels_on_cuda_read_registered_host_memory(dtype: torch.dtype, dim: int) -> None:
    from graphtier.memory.features import _triton_kernels as compiled
    from graphtier.memory.features.unified import UnifiedTensor

    device = torch.device("cuda", torch.cuda.current_device())
    table = torch.randn(1000, dim).to(dtype)
    ids = torch.randint(0, 1000, (777,))
    with UnifiedTensor(table.clone()) as host:
        for aligned in (False, True):
            out = torch.empty((777, dim), dtype=dtype, device=device)
            compiled.gather_rows_triton(host.tensor, ids.to(device), out, aligned=aligned)
            assert torch.equal(out.cpu(), table[ids])
        local = table[:100].to(device)
        positions = torch.randperm(777, device=device)
        out = torch.zeros((777, dim), dtype=dtype, device=device)
        compiled.tiered_gather_triton(local, host.tensor[300:], ids.to(device), positions, out, host_start=300)
        expected = torch.zeros((777, dim), dtype=dtype)
        compiled.tiered_gather_reference(table[:100], table[300:], ids, positions.cpu(), expected, host_start=300)
        assert torch.equal(out.cpu(), expected)
