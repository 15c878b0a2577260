"""DeviceTemporalSampler: the cut kernel (interpreted Triton and the torch twin) equals the numpy reference, and the
device path's batches equal the CPU TemporalNeighborSampler's, tensor for tensor, with no edge from the future."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.errors import OptionError
from graphtier.sampling import DenseTopology, DeviceTemporalSampler, MiniBatch, TemporalNeighborSampler
from graphtier.sampling.link.sampler import LinkSampler
from graphtier.sampling.temporal._temporal_kernels import temporal_hop_py
from graphtier.sampling.temporal.temporal_device import first_seen_pairs, temporal_cuts_torch
from tests.interpreted import HAS_TRITON, load_interpreted

from .test_temporal import check_batch
from .test_temporal_kernels import timed_csc

cut_kernels = load_interpreted("sampling/temporal/_temporal_device_kernels.py") if HAS_TRITON else None
needs_triton = pytest.mark.skipif(not HAS_TRITON, reason="needs triton")


def assert_identical(got: MiniBatch, expected: MiniBatch) -> None:
    for name in ("n_id", "n_time", "seed_index", "seeds"):
        assert torch.equal(getattr(got, name).cpu(), getattr(expected, name)), name
    assert [(b.num_src, b.num_dst) for b in got.blocks] == [(b.num_src, b.num_dst) for b in expected.blocks]
    for a, b in zip(got.blocks, expected.blocks):
        assert torch.equal(a.edge_index.cpu(), b.edge_index) and torch.equal(a.edge_id.cpu(), b.edge_id)


def cut_inputs(rng: np.random.Generator, n: int, e: int, rows: int) -> tuple[torch.Tensor, ...]:
    """(nodes, bounds, indptr, time_by_order) of a random timed CSC; bounds below, inside and above its times."""
    indptr, _, time, order = timed_csc(rng, n, e, horizon=30)
    nodes = torch.from_numpy(rng.integers(0, n, rows))
    bounds = torch.from_numpy(rng.integers(-3, 34, rows))
    return nodes, bounds, torch.from_numpy(indptr), torch.from_numpy(time[order])


@needs_triton
def test_cut_kernel_really_is_interpreted() -> None:
    from triton.runtime.interpreter import InterpretedFunction

    assert isinstance(cut_kernels.temporal_cut_kernel, InterpretedFunction)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 25), e=st.integers(0, 300), rows=st.integers(0, 600),
       inclusive=st.booleans())  # fmt: skip
def test_cut_kernel_and_torch_twin_equal_the_reference(seed: int, n: int, e: int, rows: int, inclusive: bool) -> None:
    nodes, bounds, indptr, time_by_order = cut_inputs(np.random.default_rng(seed), n, e, rows)
    steps = int((indptr[1:] - indptr[:-1]).max()).bit_length()
    expected = torch.tensor(
        [int(np.searchsorted(time_by_order[indptr[v] : indptr[v + 1]].numpy(), b, side="right" if inclusive else "left"))
         for v, b in zip(nodes.tolist(), bounds.tolist())], dtype=torch.int64,
    ).reshape(-1)  # fmt: skip
    assert torch.equal(temporal_cuts_torch(nodes, bounds, indptr, time_by_order, inclusive, steps), expected)
    if HAS_TRITON:
        args = (nodes, bounds, indptr, time_by_order, inclusive)
        assert torch.equal(cut_kernels.temporal_cuts_reference(*args), expected)
        assert torch.equal(cut_kernels.temporal_cuts_triton(*args, steps), expected)


def test_first_seen_pairs_numbers_rows_in_first_seen_order() -> None:
    node = torch.tensor([4, 2, 4, 4, 2, 7])
    bound = torch.tensor([1, 1, 1, 0, 1, 1])
    rows_node, rows_bound, local = first_seen_pairs((torch.tensor([2]), torch.tensor([0])), (node, bound))
    assert rows_node.tolist() == [2, 4, 2, 4, 7] and rows_bound.tolist() == [0, 1, 1, 0, 1]
    assert local.tolist() == [1, 2, 1, 3, 2, 4]


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 30),
    e=st.integers(0, 300),
    fanout=st.sampled_from([-1, 1, 2, 5]),
    strategy=st.sampled_from(["uniform", "recent"]),
    inclusive=st.booleans(),
    stream=st.integers(0, 2**64 - 1),
)
def test_one_device_hop_equals_the_numpy_reference(
    seed: int, n: int, e: int, fanout: int, strategy: str, inclusive: bool, stream: int
) -> None:
    """A hop of the device path (torch cut, Floyd picks) against ``temporal_hop_py`` on distinct (node, bound) rows."""
    rng = np.random.default_rng(seed)
    indptr, indices, time, order = timed_csc(rng, n, e, horizon=30)
    pairs = sorted(set(zip(rng.integers(0, n, 12).tolist(), rng.integers(-2, 34, 12).tolist())))
    dst, bound = (np.array(column, dtype=np.int64) for column in zip(*pairs))
    sampler = DeviceTemporalSampler(DenseTopology(indptr, indices), time, order, [fanout], strategy=strategy,
                                    inclusive=inclusive)  # fmt: skip
    sources, destinations, edge_id, rowptr = sampler.hop(torch.from_numpy(dst), torch.from_numpy(bound), fanout, stream)
    assert torch.equal(
        rowptr,
        torch.cat(
            [torch.zeros(1, dtype=torch.int64), torch.cumsum(torch.bincount(destinations, minlength=dst.shape[0]), 0)]
        ),
    )
    src, src_bound, ref_edge_id, dst_index = temporal_hop_py(
        indptr, indices, time, order, dst, bound, fanout, strategy == "recent", inclusive, stream
    )
    assert np.array_equal(edge_id.numpy(), ref_edge_id) and np.array_equal(sources.numpy(), src)
    assert np.array_equal(destinations.numpy(), dst_index) and np.array_equal(bound[destinations.numpy()], src_bound)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 30),
    e=st.integers(0, 250),
    fanouts=st.lists(st.sampled_from([-1, 1, 2, 4]), min_size=1, max_size=3),
    strategy=st.sampled_from(["uniform", "recent"]),
    inclusive=st.booleans(),
    one_time=st.booleans(),
)
def test_device_batches_equal_the_cpu_sampler_and_never_read_the_future(
    seed: int, n: int, e: int, fanouts: list[int], strategy: str, inclusive: bool, one_time: bool
) -> None:
    """Node seeds (of one time, or of many): every hop's edges are earlier than (or at, ``inclusive``) their
    destination row's bound, and the batch is the CPU sampler's."""
    rng = np.random.default_rng(seed)
    indptr, indices, time, order = timed_csc(rng, n, e, horizon=40)
    options = dict(strategy=strategy, inclusive=inclusive, seed=seed)
    device = DeviceTemporalSampler(DenseTopology(indptr, indices), time, order, fanouts, **options)
    cpu = TemporalNeighborSampler(indptr, indices, time, order, fanouts, **options)
    seeds = rng.integers(0, n, 6).astype(np.int64)
    seed_time = np.full(6, 20) if one_time else rng.integers(0, 45, 6).astype(np.int64)
    mb = device.sample(seeds, seed_time, batch_id=3)
    check_batch(mb, indptr, indices, time, seeds, seed_time, inclusive)
    assert_identical(mb, cpu.sample(seeds, seed_time, batch_id=3))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31), strategy=st.sampled_from(["uniform", "recent"]))
def test_link_seeds_at_their_edge_times_never_see_their_own_edge(seed: int, strategy: str) -> None:
    """Both endpoints of a pair at the pair's edge time (a link task's seeds), through the LinkSampler (torch
    exclusion, as the store's device path): no block holds an edge at or after its row's time."""
    rng = np.random.default_rng(seed)
    indptr, indices, time, order = timed_csc(rng, 40, 1500, horizon=200)
    dst = np.repeat(np.arange(40), np.diff(indptr))
    pairs = np.stack([indices, dst], 1)
    device = DeviceTemporalSampler(DenseTopology(indptr, indices), time, order, [4, 3], strategy=strategy, seed=seed)
    cpu = TemporalNeighborSampler(indptr, indices, time, order, [4, 3], strategy=strategy, seed=seed)
    common = dict(num_nodes=40, num_negatives=1, seed=seed, times=time, exclude=False)
    on_device = LinkSampler(lambda s, b, t: device.sample(s, t, b), pairs, exclusion="torch", **common)
    on_cpu = LinkSampler(lambda s, b, t: cpu.sample(s, t, b), pairs, exclusion="numba", **common)
    ids = rng.choice(pairs.shape[0], 64, replace=False)
    mb, expected = on_device.sample(ids, 2), on_cpu.sample(ids, 2)
    n_time = mb.n_time.numpy()
    assert np.array_equal(n_time[mb.src_index.numpy()[:64]], time[ids])
    for block in mb.blocks:
        _, d = block.edge_index.numpy()
        e = block.edge_id.numpy()
        assert np.all(time[e] < n_time[d])  # never at or after the row's time, on every hop
        assert np.all(n_time[d[np.isin(e, ids)]] > time[e[np.isin(e, ids)]])  # a target edge: only later rows
    assert_identical(mb, expected)


@pytest.mark.parametrize("inclusive", [False, True])
def test_full_fanout_takes_the_cpu_samplers_admissible_edge_sets(inclusive: bool) -> None:
    rng = np.random.default_rng(8)
    indptr, indices, time, order = timed_csc(rng, 60, 3000, horizon=100)
    seeds = rng.integers(0, 60, 20)
    seed_time = rng.integers(0, 110, 20)
    device = DeviceTemporalSampler(DenseTopology(indptr, indices), time, order, [-1, -1], inclusive=inclusive)
    cpu = TemporalNeighborSampler(indptr, indices, time, order, [-1, -1], inclusive=inclusive)
    got, expected = device.sample(seeds, seed_time, 0), cpu.sample(seeds, seed_time, 0)

    def edge_sets(mb: MiniBatch) -> list[set[tuple[int, int, int]]]:  # (edge id, destination node, its bound)
        n_id, n_time = mb.n_id.numpy(), mb.n_time.numpy()
        return [set(zip(b.edge_id.tolist(), n_id[b.edge_index[1]].tolist(), n_time[b.edge_index[1]].tolist()))
                for b in mb.blocks]  # fmt: skip

    assert edge_sets(got) == edge_sets(expected)
    first_hop = {
        (int(p), int(v), int(t))
        for v, t in zip(seeds.tolist(), seed_time.tolist())
        for p in range(indptr[v], indptr[v + 1])
        if (time[p] <= t if inclusive else time[p] < t)
    }
    assert edge_sets(got)[-1] == first_hop


@needs_triton
@pytest.mark.parametrize("strategy", ["uniform", "recent"])
def test_interpreted_triton_cuts_and_picks_give_the_cpu_batches(strategy: str) -> None:
    rng = np.random.default_rng(3)
    indptr, indices, time, order = timed_csc(rng, 80, 2500, horizon=60)
    picks = load_interpreted("sampling/device/_device_kernels.py")
    device = DeviceTemporalSampler(DenseTopology(indptr, indices), time, order, [5, 3], strategy=strategy, seed=4,
                                   picks="triton", kernels=picks, cut_kernels=cut_kernels)  # fmt: skip
    cpu = TemporalNeighborSampler(indptr, indices, time, order, [5, 3], strategy=strategy, seed=4)
    seeds, seed_time = rng.integers(0, 80, 30), rng.integers(0, 70, 30)
    mb = device.sample(torch.from_numpy(seeds), torch.from_numpy(seed_time), 9)
    check_batch(mb, indptr, indices, time, seeds, seed_time, inclusive=False)
    assert_identical(mb, cpu.sample(seeds, seed_time, 9))


def test_bad_arguments_name_the_argument() -> None:
    rng = np.random.default_rng(0)
    indptr, indices, time, order = timed_csc(rng, 10, 50, horizon=20)
    topology = DenseTopology(indptr, indices)
    with pytest.raises(OptionError, match="edge_time: expected an int64 array of 50"):
        DeviceTemporalSampler(topology, time[:-1], order, [2])
    with pytest.raises(OptionError, match="edge_time_order: expected an int64"):
        DeviceTemporalSampler(topology, time, order.astype(np.int32), [2])
    with pytest.raises(OptionError, match="strategy: expected one of uniform, recent"):
        DeviceTemporalSampler(topology, time, order, [2], strategy="latest")
    with pytest.raises(OptionError, match="topology"):
        DeviceTemporalSampler(object(), time, order, [2])  # type: ignore[arg-type]
    sampler = DeviceTemporalSampler(topology, torch.from_numpy(time), torch.from_numpy(order), [2])
    with pytest.raises(OptionError, match=r"seed_time: expected one time per seed \(3\)"):
        sampler.sample(np.arange(3), np.arange(2))
    with pytest.raises(OptionError, match="seed_time: expected integer times"):
        sampler.sample(np.arange(3), np.array([1.5, 2.0, 3.0]))
    with pytest.raises(OptionError, match="seeds: expected node ids in"):
        sampler.sample(np.array([10]), 5)


def test_cut_kernel_compiles_for_cuda_without_a_gpu() -> None:
    """The interpreter runs the kernel's Python; this runs Triton's real front end and ptxas on it (sm_90)."""
    triton = pytest.importorskip("triton")
    from triton.backends import backends

    if "nvidia" not in backends:
        pytest.skip("triton has no CUDA backend")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from graphtier.sampling.temporal import _temporal_device_kernels as compiled

    signature = {name: "*i64" for name in ("nodes", "bounds", "indptr", "time_by_order", "admitted")}
    signature.update(num_rows="i32", steps="i32", INCLUSIVE="constexpr", BLOCK="constexpr")
    for inclusive in (False, True):
        source = ASTSource(compiled.temporal_cut_kernel, signature,
                           constexprs={"INCLUSIVE": inclusive, "BLOCK": compiled.BLOCK_ROWS})  # fmt: skip
        kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32))
        assert len(kernel.asm["cubin"]) > 0


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_compiled_sampler_on_cuda_is_identical() -> None:
    device = torch.device("cuda", torch.cuda.current_device())
    rng = np.random.default_rng(0)
    indptr, indices, time, order = timed_csc(rng, 20_000, 400_000, horizon=1000)
    topology = DenseTopology(indptr, indices, device=device)
    for strategy, inclusive in (("uniform", False), ("recent", True)):
        sampler = DeviceTemporalSampler(topology, time, order, [15, 10], strategy=strategy, inclusive=inclusive, seed=5)
        assert sampler.picks == "triton"
        cpu = TemporalNeighborSampler(indptr, indices, time, order, [15, 10], strategy=strategy, inclusive=inclusive,
                                      seed=5)  # fmt: skip
        seeds, seed_time = rng.integers(0, 20_000, 1024), rng.integers(0, 1000, 1024)
        mb = sampler.sample(torch.from_numpy(seeds).to(device), torch.from_numpy(seed_time).to(device), 1)
        assert mb.n_id.device == device and all(b.edge_id.device == device for b in mb.blocks)
        assert_identical(mb, cpu.sample(seeds, seed_time, 1))
