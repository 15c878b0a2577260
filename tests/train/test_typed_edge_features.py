"""Edge features on typed graphs: the typed samplers' edge ids feed each relation block's ``edge_attr`` from the
store's tiers, R-GAT reads them (PyG's ``GATConv(edge_dim=)`` per relation), node and link tasks, one-line refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from graphtier import Dataset, OptionError
from graphtier.dataset.importers.formats.manifest import import_manifest
from graphtier.graphstore import GraphStore
from graphtier.sampling.batch import Block
from graphtier.train import train
from graphtier.train.infer.predict import predict
from graphtier.train.nn.aggregate import block_csr
from graphtier.train.nn.typed_layers import RelationGAT
from tests.dataset.importers.helpers import assert_user_error, run_cli
from tests.graphstore.test_edge_features import with_edge_features
from tests.train.test_typed_link import write_recommendation_manifest
from tests.typed_data import write_typed_labelled_graph

RUN = {"model": "rgat", "fanouts": (4, 3), "hidden": 8, "heads": 2, "epochs": 2, "batch_size": 64, "quiet": True,
       "num_threads": 1, "prefetch": 1, "seed": 0}  # fmt: skip


@pytest.fixture(scope="module")
def typed_edges(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    dataset = write_typed_labelled_graph(tmp_path_factory.mktemp("typed_ef") / "ds")
    return with_edge_features(dataset, 5, seed=3)


def test_relation_gat_with_edge_features_is_pyg_gatconv() -> None:
    from torch_geometric.nn import GATConv

    torch.manual_seed(0)
    conv = RelationGAT(6, 4, 3, 2, concat=True, dropout=0.0, edge_dim=5).eval()
    pyg = GATConv((6, 4), 3, heads=2, add_self_loops=False, bias=False, edge_dim=5).eval()
    with torch.no_grad():
        pyg.lin_src.weight.copy_(conv.lin_src.weight)
        pyg.lin_dst.weight.copy_(conv.lin_dst.weight)
        pyg.lin_edge.weight.copy_(conv.lin_edge.weight)
        pyg.att_src.copy_(conv.att_src)
        pyg.att_dst.copy_(conv.att_dst)
        pyg.att_edge.copy_(conv.att_edge)
    x_src, x_dst = torch.randn(7, 6), torch.randn(4, 4)
    rowptr, col = torch.tensor([0, 2, 2, 5, 6]), torch.tensor([0, 3, 1, 2, 6, 4])
    edge_attr = torch.randn(6, 5)
    dst = torch.repeat_interleave(torch.arange(4), rowptr[1:] - rowptr[:-1])
    expected = pyg((x_src, x_dst), torch.stack([col, dst]), edge_attr=edge_attr)
    got = conv(x_src, x_dst, block_csr(Block(rowptr, col, 7)), edge_attr)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_typed_batches_carry_the_edge_rows_of_their_edges(typed_edges: Dataset) -> None:
    table = np.asarray(typed_edges.edge_features)
    with GraphStore.open(typed_edges, features_on="tiered", ram_budget="30%", edge_features=True,
                         log=lambda _: None) as store:  # fmt: skip
        batch = store.typed_sampler((4, 3))(np.arange(20), 0)
        relations = [rel for blk in batch.blocks for rel in blk.relations.values()]
        assert relations and all(rel.edge_id is not None for rel in relations)
        for rel in relations:
            np.testing.assert_array_equal(store.gather_edges(rel.edge_id).numpy(), table[rel.edge_id.numpy()])


def test_rgat_reads_typed_edge_features_from_every_tier(typed_edges: Dataset) -> None:
    losses = {}
    for name, placement in (("ram", {"features_on": "cpu-gather"}), ("tiered", {"features_on": "tiered",
                            "ram_budget": "30%"}), ("disk", {"features_on": "tiered", "ram_budget": "0"})):  # fmt: skip
        report = train(typed_edges, edge_features=True, **placement, **RUN).report
        losses[name] = [e["loss"] for e in report["epochs"]]
        assert sum(report["epochs"][-1]["edge_feature_bytes_by_tier"].values()) > 0
    assert losses["ram"] == losses["tiered"] == losses["disk"]
    without = [e["loss"] for e in train(typed_edges, **RUN).report["epochs"]]
    assert without != losses["ram"]  # the edge rows enter the attention


def test_typed_link_prediction_reads_edge_features(tmp_path: Path) -> None:
    linked = import_manifest(write_recommendation_manifest(tmp_path / "src"), tmp_path / "ds", add_reverse=True,
                             edge_split="0.8,0.1,0.1", split_relation="user,rates,item", eval_negatives=20)  # fmt: skip
    linked = with_edge_features(linked, 3, seed=1)
    result = train(linked, task="link", edge_features=True, save_model=str(tmp_path / "m.pt"),
                   **{**RUN, "batch_size": 256})  # fmt: skip
    final = result.report["final"]
    assert final["method"] == "sampled" and final["test_auc"] is not None  # layer-wise inference has no edge rows
    with pytest.raises(OptionError, match="reads edge inputs"):
        predict(tmp_path / "m.pt", linked)


def test_typed_refusals_are_one_line(typed_edges: Dataset) -> None:
    result = run_cli("train", str(typed_edges.path), "--edge-features", "--model", "rgcn", "--epochs", "1", "--quiet")
    assert_user_error(result, "--edge-features: the model rgcn reads no edge features", "rgat")
