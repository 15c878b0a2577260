"""Layer-wise full-graph inference of typed models equals the model on full-neighbour batches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import graphtier.train.infer.layerwise as layerwise
import graphtier.train.infer.typed_inference as typed_inference
from graphtier.train.infer._attention_kernels import attention_rows, attention_rows_reference
from graphtier.train.infer.layerwise import FullNeighbourhood, chunk_bounds, type_in_edges_indptr
from graphtier.train.infer.typed_inference import typed_layerwise_outputs
from graphtier.train.nn.typed_models import build_typed_model
from tests.recording_progress import RecordingProgress
from tests.train.typed_graphs import batch_inputs, full_batch, mag_like

MODELS = ("rgcn", "rgat", "hsage")


@pytest.mark.parametrize("path", ["tables", "blocks"])
@pytest.mark.parametrize("featureless", ["embedding", "onehot", "zeros"])
@pytest.mark.parametrize("kind", MODELS)
def test_layerwise_equals_full_neighbour_batches(
    kind: str, featureless: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both paths of exact typed inference: the CPU's tables, and the blocks that CUDA takes (forced here)."""
    if path == "blocks":
        monkeypatch.setattr(typed_inference, "reads_by_tables", lambda model, device: False)
    torch.manual_seed(0)
    graph = mag_like()
    model = build_typed_model(kind, graph.schema, in_dims=graph.in_dims, hidden=8, num_classes=3, num_layers=2,
                              featureless=featureless, heads=2, norm="batch").double().eval()  # fmt: skip
    batch = full_batch(graph, np.arange(24), 2)
    expected = model(batch_inputs(graph, batch), batch.blocks, batch.n_id).float()
    progress = RecordingProgress()

    def gather(t: str, ids: torch.Tensor) -> torch.Tensor:
        return graph.features[t][ids].float()

    for chunk_size in (5, 1000):
        logits, embeddings = typed_layerwise_outputs(
            model, gather, graph.indptr, graph.indices, graph.schema, chunk_size=chunk_size, keep_embeddings=True,
            progress=progress,
        )  # fmt: skip
        torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-5)
        assert embeddings is not None and embeddings.shape == (24, 8)
    assert progress.finished_stages and all(stage.done == stage.total for stage in progress.finished_stages)


def test_full_neighbour_block_keeps_destinations_first() -> None:
    graph = mag_like()
    n_id, block = FullNeighbourhood(graph.indptr, graph.indices, graph.schema).block("paper", np.array([7, 3]))
    assert n_id["paper"][:2].tolist() == [7, 3]
    assert block.num_dst == {"paper": 2, "author": 0, "subject": 0, "venue": 0}
    for (src, _, dst), rel in block.relations.items():
        if rel.num_edges == 0:  # a relation into a type without destinations here
            continue
        assert dst == "paper"
        index = [r.type for r in graph.schema.relations].index((src, _, dst))
        for row, v in enumerate([7, 3]):
            got = sorted(n_id[src][rel.col[rel.rowptr[row] : rel.rowptr[row + 1]]].tolist())
            assert got == sorted(graph.neighbours(index, v))


def test_layerwise_mlp() -> None:
    graph = mag_like()
    model = build_typed_model("mlp", graph.schema, in_dims=graph.in_dims, hidden=8, num_classes=3, num_layers=2)

    def gather(t: str, ids: torch.Tensor) -> torch.Tensor:
        return graph.features[t][ids].float()

    logits, embeddings = typed_layerwise_outputs(
        model, gather, graph.indptr, graph.indices, graph.schema, chunk_size=7, keep_embeddings=True
    )
    torch.testing.assert_close(logits, model.mlp.net(graph.features["paper"].float()))
    assert embeddings is not None and embeddings.shape == (24, 8)


@pytest.mark.parametrize("kind", MODELS)
def test_scratch_files_and_the_edge_bound_change_nothing(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outputs in memory-mapped scratch files, chunks cut by the in-edge bound: the in-RAM result."""
    torch.manual_seed(0)
    graph = mag_like()
    model = build_typed_model(kind, graph.schema, in_dims=graph.in_dims, hidden=8, num_classes=3, num_layers=2,
                              heads=2).eval()  # fmt: skip

    def gather(t: str, ids: torch.Tensor) -> torch.Tensor:
        return graph.features[t][ids].float()

    def run(**options: object) -> torch.Tensor:
        return typed_layerwise_outputs(
            model, gather, graph.indptr, graph.indices, graph.schema, chunk_size=1000, **options
        )[0]  # fmt: skip

    in_ram = run()
    monkeypatch.setattr(layerwise, "MAX_CHUNK_EDGES", 3)  # a few in-edges per step: many chunks, hubs alone
    bounded = run(scratch_dir=tmp_path)
    torch.testing.assert_close(bounded, in_ram, rtol=1e-5, atol=1e-5)
    indptr = type_in_edges_indptr(graph.indptr, graph.schema, graph.schema.target)
    bounds = chunk_bounds(indptr, graph.schema.target_type.count, 1000, 3)
    assert len(bounds) > 3 and all(b - a == 1 or indptr[b] - indptr[a] <= 3 for a, b in zip(bounds[:-1], bounds[1:]))


@pytest.mark.parametrize("featureless", ["embedding", "onehot", "zeros"])
@pytest.mark.parametrize(("kind", "num_bases"), [("rgcn", 0), ("rgcn", 2), ("hsage", 0), ("rgat", 0)])
def test_tables_read_features_in_order(kind: str, num_bases: int, featureless: str) -> None:
    """R-GCN, HeteroSAGE and R-GAT on the CPU read every feature table in row order, in contiguous runs, never a row
    per edge, narrowing layers projected first (hidden 2 < the widths 5 and 3), and give the full-neighbour model's
    logits; three layers, so a hidden layer reads the previous layer's tables."""
    torch.manual_seed(0)
    graph = mag_like()
    model = build_typed_model(kind, graph.schema, in_dims=graph.in_dims, hidden=2, num_classes=3, num_layers=3,
                              featureless=featureless, num_bases=num_bases, norm="layer", heads=2).double().eval()  # fmt: skip
    batch = full_batch(graph, np.arange(24), 3)
    expected = model(batch_inputs(graph, batch), batch.blocks, batch.n_id).float()
    reads: list[tuple[str, list[int]]] = []

    def gather(t: str, ids: torch.Tensor) -> torch.Tensor:
        reads.append((t, ids.tolist()))
        return graph.features[t][ids].float()

    logits, _ = typed_layerwise_outputs(model, gather, graph.indptr, graph.indices, graph.schema, chunk_size=4)
    torch.testing.assert_close(logits, expected, rtol=1e-4, atol=1e-4)  # float32 tables, a float64 model
    assert reads
    for t, ids in reads:
        assert ids == list(range(ids[0], ids[0] + len(ids))), f"{t}: rows read out of order"
    per_type = {t: sum(len(ids) for name, ids in reads if name == t) for t in graph.features}
    relations_from = {t: sum(rel.src == t for rel in graph.schema.relations) for t in graph.features}
    for t, count in per_type.items():  # once for the root terms, once per relation that reads the type
        assert count <= (relations_from[t] + 1) * graph.schema.node_type(t).count


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), heads=st.integers(1, 3), channels=st.integers(1, 4),
       first=st.integers(0, 30), span=st.integers(0, 40), base=st.sampled_from([0, 11]))  # fmt: skip
def test_attention_rows_match_the_reference(
    seed: int, heads: int, channels: int, first: int, span: int, base: int
) -> None:
    """GAT's per-destination softmax-weighted sums straight from a [N, H * C + H] table equal the numpy reference
    (large scores too: the maximum is subtracted); a node without in-edges gets zeros."""
    rng = np.random.default_rng(seed)
    num_nodes = 40
    degrees = rng.integers(0, 6, num_nodes)
    indptr = np.concatenate([[0], np.cumsum(degrees)]).astype(np.int64)
    indices = rng.integers(0, num_nodes, int(indptr[-1])) + base
    table = (rng.standard_normal((num_nodes, heads * channels + heads)) * 5).astype(np.float32)
    stop = min(num_nodes, first + span)
    scores = (rng.standard_normal((stop - first, heads)) * 5).astype(np.float32)
    out = np.full((stop - first, heads * channels), np.nan, dtype=np.float32)
    assert attention_rows(table, indptr, indices, first, stop, scores, heads, base, out) == 0
    expected = attention_rows_reference(table, indptr, indices, first, stop, scores, heads, base)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    assert not out[degrees[first:stop] == 0].any()
    if stop > first and indptr[stop] > indptr[first]:
        assert attention_rows(table, indptr, indices, first, stop, scores, heads, base + 100, out) > 0
