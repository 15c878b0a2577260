"""The topology gather kernel equals its torch reference: on the CPU under TRITON_INTERPRET=1, on CUDA compiled."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("triton")

from tests.interpreted import load_interpreted

kernels = load_interpreted("memory/topology/_topology_kernels.py")
INDEX_DTYPES = [torch.int32, torch.int64]


def test_kernel_really_is_interpreted() -> None:
    from triton.runtime.interpreter import InterpretedFunction

    assert isinstance(kernels.tiered_positions_kernel, InterpretedFunction)


def run_both(
    local: torch.Tensor, host: torch.Tensor, positions: torch.Tensor, host_start: int
) -> tuple[torch.Tensor, torch.Tensor]:
    out = torch.full((positions.shape[0],), -7, dtype=torch.int64)
    expected = out.clone()
    kernels.gather_positions_triton(local, host, positions, out, host_start=host_start)
    kernels.gather_positions_reference(local, host, positions, expected, host_start=host_start)
    return out, expected


@settings(max_examples=20, deadline=None)
@given(
    num_entries=st.integers(1, 3000),
    num_positions=st.integers(0, 2500),
    dtype=st.sampled_from(INDEX_DTYPES),
    seed=st.integers(0, 2**16),
)
def test_kernel_equals_reference(num_entries: int, num_positions: int, dtype: torch.dtype, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    indices = torch.randint(-(2**31), 2**31 - 1, (num_entries,), generator=generator).to(dtype)
    local_rows = int(torch.randint(0, num_entries + 1, (1,), generator=generator))
    host_start = int(torch.randint(local_rows, num_entries + 1, (1,), generator=generator))
    host_end = int(torch.randint(host_start, num_entries + 1, (1,), generator=generator))
    positions = torch.randint(0, num_entries, (num_positions,), generator=generator)
    out, expected = run_both(indices[:local_rows].clone(), indices[host_start:host_end].clone(), positions, host_start)
    assert torch.equal(out, expected)
    served = (positions < local_rows) | ((positions >= host_start) & (positions < host_end))
    assert torch.equal(out[served], indices[positions[served]].to(torch.int64))
    assert bool((out[~served] == -7).all())  # the disk tier is left to the caller


@pytest.mark.parametrize("dtype", INDEX_DTYPES)
def test_host_part_beyond_two_to_the_31(dtype: torch.dtype) -> None:
    host_start = 2**31 + 12345  # positions and offsets need int64 arithmetic
    local = torch.arange(100, dtype=dtype) * 3
    host = torch.arange(5000, dtype=dtype) + 10**6
    positions = torch.cat(
        [
            torch.randint(host_start, host_start + 5000, (3000,)),
            torch.randint(0, 100, (500,)),
            torch.tensor([host_start - 1, host_start + 5000, 2**32 + 5, 100]),  # other tiers: untouched
        ]
    )
    out, expected = run_both(local, host, positions, host_start)
    assert torch.equal(out, expected)
    assert torch.equal(out[:3000], positions[:3000] - host_start + 10**6)
    assert bool((out[-4:] == -7).all())


def test_launcher_rejects_bad_arguments() -> None:
    local, host = torch.zeros(4, dtype=torch.int32), torch.zeros(4, dtype=torch.int32)
    with pytest.raises(ValueError, match="positions"):
        kernels.gather_positions_triton(
            local, host, torch.tensor([0], dtype=torch.int32), torch.empty(1, dtype=torch.int64), host_start=4
        )
    with pytest.raises(ValueError, match="out"):
        kernels.gather_positions_triton(local, host, torch.tensor([0]), torch.empty(1, dtype=torch.int32), host_start=4)
    with pytest.raises(ValueError, match="local"):
        kernels.gather_positions_triton(
            torch.zeros(4), host, torch.tensor([0]), torch.empty(1, dtype=torch.int64), host_start=4
        )


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("dtype", INDEX_DTYPES)
def test_compiled_kernel_reads_registered_host_memory(dtype: torch.dtype) -> None:
    from graphtier.memory.features.unified import UnifiedTensor
    from graphtier.memory.topology import _topology_kernels as compiled

    device = torch.device("cuda", torch.cuda.current_device())
    indices = torch.randint(0, 10**9, (200_003,), dtype=torch.int64).to(dtype)
    positions = torch.randint(0, 200_003, (100_001,))
    with UnifiedTensor(indices[150_000:].clone()) as host:
        out = torch.full((100_001,), -7, dtype=torch.int64, device=device)
        compiled.gather_positions_triton(
            indices[:60_000].to(device), host.tensor, positions.to(device), out, host_start=150_000
        )
        expected = torch.full((100_001,), -7, dtype=torch.int64)
        compiled.gather_positions_reference(
            indices[:60_000], indices[150_000:], positions, expected, host_start=150_000
        )
        assert torch.equal(out.cpu(), expected)
