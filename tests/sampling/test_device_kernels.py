"""The Triton Floyd pick kernel draws exactly numba's ``floyd_positions``: interpreted on the CPU, compiled on CUDA."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

pytest.importorskip("triton")

from graphtier.sampling.neighbor import _neighbor_kernels as nk
from tests.interpreted import load_interpreted

kernels = load_interpreted("sampling/device/_device_kernels.py")


def hop_arrays(degrees: np.ndarray, fanout: int, rng: np.random.Generator) -> tuple[torch.Tensor, ...]:
    """(dst_index, starts, degrees, offsets) int64 tensors of a hop whose destinations have ``degrees``."""
    degrees_t = torch.from_numpy(np.asarray(degrees, dtype=np.int64))
    starts = torch.from_numpy(rng.integers(0, 2**40, degrees_t.shape[0]))
    counts = torch.clamp(degrees_t, max=fanout)
    offsets = torch.zeros(degrees_t.shape[0] + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(counts, 0)
    dst_index = torch.nonzero(counts < degrees_t).flatten()
    return dst_index, starts, degrees_t, offsets


def numba_expected(dst_index, starts, degrees, offsets, stream: int, fanout: int) -> torch.Tensor:
    """The positions numba's ``floyd_positions`` draws, one destination at a time (-5 elsewhere)."""
    out = np.full(int(offsets[-1]), -5, dtype=np.int64)
    table_size = 1 << max(1, (2 * fanout - 1).bit_length())
    table = np.empty(table_size, dtype=np.int64)
    for j in dst_index.tolist():
        first = int(offsets[j])
        picks = out[first : first + fanout]
        key = np.uint64(nk.node_key(np.uint64(stream), j))
        nk.floyd_positions(key, int(degrees[j]), fanout, picks, table)
        picks += int(starts[j])
    return torch.from_numpy(out)


def run_all(dst_index, starts, degrees, offsets, stream: int, fanout: int) -> list[torch.Tensor]:
    """Outputs of the interpreted kernel, the numba twin floyd_picks and the Python reference."""
    outputs = []
    for run in (kernels.floyd_picks_triton, kernels.floyd_picks_reference):
        out = torch.full((int(offsets[-1]),), -5, dtype=torch.int64)
        run(dst_index, starts, degrees, offsets, stream, fanout, out)
        outputs.append(out)
    out = torch.full((int(offsets[-1]),), -5, dtype=torch.int64)
    nk.floyd_picks(
        dst_index.numpy(), starts.numpy(), degrees.numpy(), offsets.numpy(), np.uint64(stream), fanout, out.numpy()
    )
    outputs.append(out)
    return outputs


def test_kernel_really_is_interpreted() -> None:
    from triton.runtime.interpreter import InterpretedFunction

    assert isinstance(kernels.floyd_picks_kernel, InterpretedFunction)


degree_values = st.one_of(
    st.integers(0, 60),
    st.integers(2**32 - 3, 2**32 + 3),  # both sides of the 32-bit multiply-shift / 64-bit modulo switch
    st.integers(2**32, 2**62),
)


@settings(max_examples=30, deadline=None)
@given(
    degrees=st.lists(degree_values, min_size=0, max_size=70),
    fanout=st.integers(1, 40),
    stream=st.integers(0, 2**64 - 1),
    seed=st.integers(0, 2**16),
)
def test_kernel_equals_numba_floyd_positions(degrees: list[int], fanout: int, stream: int, seed: int) -> None:
    arrays = hop_arrays(np.array(degrees, dtype=np.int64), fanout, np.random.default_rng(seed))
    expected = numba_expected(*arrays, stream, fanout)
    for out in run_all(*arrays, stream, fanout):
        assert torch.equal(out, expected)


@pytest.mark.parametrize("any_wide", [True, False])
@pytest.mark.parametrize("fanout", [1, 2, 7, 32, 33, 40])
def test_wide_degrees_and_hash_set_fanouts(fanout: int, any_wide: bool) -> None:
    """Lists of >= 2^32 entries (64-bit modulo draws) and fanouts > 32 (numba's hash-set path) still agree.

    Without a wide list the kernel keeps its picks in 32 bits: lists of 2^32 - 1 entries are the edge case.
    """
    wide = [2**32 - 2, 2**32 - 1] + ([2**32, 2**32 + 1, 2**33 + 5, 2**40, 2**63 - 1] if any_wide else [])
    degrees = np.array(wide + [fanout + 1, fanout + 2, 3 * fanout, 200], dtype=np.int64)
    arrays = hop_arrays(degrees, fanout, np.random.default_rng(fanout))
    stream = nk.stream_key(fanout, 3, 1)
    expected = numba_expected(*arrays, stream, fanout)
    outputs = run_all(*arrays, stream, fanout)
    for out in outputs:
        assert torch.equal(out, expected)
    dst_index, starts, degrees_t, offsets = arrays
    for j in dst_index.tolist():  # distinct positions inside the list
        picks = outputs[0][offsets[j] : offsets[j + 1]] - starts[j]
        assert picks.unique().numel() == fanout and 0 <= int(picks.min()) and int(picks.max()) < int(degrees_t[j])


def test_picks_are_uniform_over_destinations() -> None:
    """Chi-square: 2000 destinations of degree 50, 5 picks each: every position is drawn equally often."""
    degree, fanout, count = 50, 5, 2000
    dst_index, _, degrees, offsets = hop_arrays(np.full(count, degree), fanout, np.random.default_rng(0))
    starts = torch.zeros(count, dtype=torch.int64)
    out = torch.full((int(offsets[-1]),), -1, dtype=torch.int64)
    kernels.floyd_picks_triton(dst_index, starts, degrees, offsets, nk.stream_key(3, 0, 0), fanout, out)
    observed = np.bincount(out.numpy(), minlength=degree)
    assert observed.sum() == count * fanout and observed.size == degree
    assert chisquare(observed).pvalue > 1e-4


def test_tile_shape() -> None:
    for fanout in (1, 2, 3, 5, 16, 17, 40, 100, 1000, kernels.MAX_FANOUT):
        block, fanout_p2 = kernels.tile_shape(fanout)
        assert fanout_p2 >= fanout and fanout_p2 & (fanout_p2 - 1) == 0 and fanout_p2 < 2 * fanout + 1
        assert block >= 1 and block & (block - 1) == 0 and block <= kernels.MAX_BLOCK
        assert block * fanout_p2 <= max(kernels.TILE_ELEMENTS, fanout_p2)


def test_launcher_rejects_bad_arguments() -> None:
    dst_index, starts, degrees, offsets = hop_arrays(np.array([10, 20]), 3, np.random.default_rng(0))
    out = torch.empty(int(offsets[-1]), dtype=torch.int64)
    good = (dst_index, starts, degrees, offsets, 5, 3, out)
    kernels.floyd_picks_triton(*good)
    with pytest.raises(ValueError, match="dst_index"):
        kernels.floyd_picks_triton(dst_index.int(), *good[1:])
    with pytest.raises(ValueError, match="offsets"):
        kernels.floyd_picks_triton(dst_index, starts, degrees, offsets[:-1], 5, 3, out)
    with pytest.raises(ValueError, match="degrees"):
        kernels.floyd_picks_triton(dst_index, starts, degrees[:1], offsets, 5, 3, out)
    for fanout in (0, -1, kernels.MAX_FANOUT + 1, 2.0):
        with pytest.raises(ValueError, match="fanout"):
            kernels.floyd_picks_triton(dst_index, starts, degrees, offsets, 5, fanout, out)
    for stream in (-1, 2**64):
        with pytest.raises(ValueError, match="stream"):
            kernels.floyd_picks_triton(dst_index, starts, degrees, offsets, stream, 3, out)


@pytest.mark.parametrize("wide", [False, True])
def test_kernel_compiles_for_cuda_without_a_gpu(wide: bool) -> None:
    """The interpreter runs the kernel's Python; this runs Triton's real front end and ptxas on it (sm_90)."""
    import triton
    from triton.backends import backends

    if "nvidia" not in backends:
        pytest.skip("triton has no CUDA backend")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from graphtier.sampling.device import _device_kernels as compiled

    signature = {name: "*i64" for name in ("dst_index", "starts", "degrees", "offsets", "stream", "out")}
    signature.update(num_picked="i32", fanout="i32", BLOCK="constexpr", FANOUT_P2="constexpr", WIDE="constexpr")
    block, fanout_p2 = compiled.tile_shape(40)
    source = ASTSource(
        compiled.floyd_picks_kernel, signature, constexprs={"BLOCK": block, "FANOUT_P2": fanout_p2, "WIDE": wide}
    )
    kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32))
    ttir = kernel.asm["ttir"]
    assert len(kernel.asm["cubin"]) > 0
    assert "arith.shrui" in ttir and ("arith.remui" in ttir) == wide  # logical shifts; 64-bit modulo only if wide


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_compiled_kernel_on_cuda_equals_numba() -> None:
    from graphtier.sampling.device import _device_kernels as compiled

    device = torch.device("cuda", torch.cuda.current_device())
    rng = np.random.default_rng(1)
    for fanout in (1, 5, 25, 40, 300):
        degrees = np.concatenate([rng.integers(0, 3 * fanout, 5000), [2**32 - 1, 2**32, 2**33 + 5, 2**40]])
        arrays = hop_arrays(degrees, fanout, rng)
        stream = nk.stream_key(9, fanout, 2)
        out = torch.full((int(arrays[3][-1]),), -5, dtype=torch.int64, device=device)
        compiled.floyd_picks_triton(*(a.to(device) for a in arrays), stream, fanout, out)
        assert torch.equal(out.cpu(), numba_expected(*arrays, stream, fanout))
