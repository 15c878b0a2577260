"""Link prediction on a typed dataset: the edge split of one relation (``--split-relation``), the typed link
sampler, training with rgcn/rgat/hsage from Python and the CLI, and the refusals as one line each."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import graphtier
from graphtier.dataset import Dataset
from graphtier.dataset.importers.formats.manifest import import_manifest
from graphtier.dataset.synthetic import synthetic_mag
from graphtier.errors import OptionError
from graphtier.graphstore import GraphStore
from graphtier.graphstore.links import typed_link_sampler
from graphtier.memory import make_topology
from graphtier.tiering.access import hit_ratio_curve
from graphtier.tiering.seeds import EpochSeeds
from graphtier.tiering.typed_reads import count_typed_reads
from graphtier.train import train
from graphtier.train.infer.predict import predict
from graphtier.train.persist.saved import load_model
from tests.cli.helpers import run

QUIET = {"quiet": True, "num_threads": 1, "prefetch": 1}
RATES = ("user", "rates", "item")


def write_recommendation_manifest(root: Path, users: int = 240, items: int = 160, per_user: int = 10) -> Path:
    """A user/item graph with features on both sides: each user and item is in one of 4 taste groups (its
    noisy one-hot features), and a user rates ``per_user`` items of its own group."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    user_group, item_group = rng.integers(0, 4, users), rng.integers(0, 4, items)
    for name, group in (("user", user_group), ("item", item_group)):
        features = np.eye(4, dtype=np.float32)[group] + 0.5 * rng.standard_normal((group.size, 4)).astype(np.float32)
        np.save(root / f"{name}.npy", features)
    rated = [rng.choice(np.flatnonzero(item_group == g), per_user, replace=False) for g in user_group]
    edges = np.stack([np.repeat(np.arange(users), per_user), np.concatenate(rated)], axis=1).astype(np.int64)
    np.save(root / "rates.npy", edges)
    manifest = {
        "name": "tiny-rec",
        "nodes": {
            "user": {"count": users, "features": str(root / "user.npy")},
            "item": {"count": items, "features": str(root / "item.npy")},
        },  # fmt: skip
        "edges": [{"type": list(RATES), "path": str(root / "rates.npy")}],
        "target": "user",
    }
    path = root / "manifest.json"
    path.write_text(json.dumps(manifest))
    return path


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_recommendation_manifest(tmp_path_factory.mktemp("rec-src"))


@pytest.fixture(scope="module")
def linked(manifest: Path, tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return import_manifest(manifest, tmp_path_factory.mktemp("rec") / "ds", add_reverse=True,
                           edge_split="0.8,0.1,0.1", split_relation="user,rates,item", eval_negatives=20)  # fmt: skip


def _edges(ds: Dataset, relation: tuple[str, str, str]) -> set[tuple[int, int]]:
    """The relation's edges as (local src, local dst)."""
    rel = ds.schema.relation(relation)
    indptr, sources = ds.relation_csc(rel)
    counts = np.diff(np.asarray(indptr))
    dst = np.repeat(np.arange(counts.size), counts)
    return set(zip((np.asarray(sources) - ds.schema.node_type(rel.src).offset).tolist(), dst.tolist()))


def test_split_relation_holds_out_both_directions(linked: Dataset, manifest: Path) -> None:
    link = linked.link
    assert link is not None and link.meta["relation"] == list(RATES) and link.meta["reverse"] == "rev_rates"
    assert link.dst_range == (0, 160) and link.eval_negatives == 20
    original = np.load(manifest.parent / "rates.npy")
    forward, backward = _edges(linked, RATES), _edges(linked, ("item", "rev_rates", "user"))
    held = np.concatenate([np.asarray(link.pairs(s).positives) for s in ("valid", "test")])
    train_pairs = np.asarray(link.pairs("train").positives)
    assert held.shape[0] + train_pairs.shape[0] == original.shape[0] == 2400
    assert not any((u, i) in forward or (i, u) in backward for u, i in held.tolist())
    assert all((u, i) in forward and (i, u) in backward for u, i in train_pairs.tolist())
    assert len(forward) == len(backward) == train_pairs.shape[0]
    assert [r.num_edges for r in linked.schema.relations] == [1920, 1920]
    every = set(map(tuple, original.tolist()))
    negatives = np.asarray(link.pairs("test").negatives)
    sources = np.asarray(link.pairs("test").positives)[:, 0]
    assert negatives.shape == (held.shape[0] // 2, 20) and negatives.max() < 160
    assert not any((int(u), int(i)) in every for u, row in zip(sources, negatives) for i in row)


def test_bad_split_relation_is_one_line(manifest: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["prepare", "manifest", str(manifest), str(tmp_path / "out"), "--add-reverse",
                        "--edge-split", "0.8,0.1,0.1", "--split-relation", "user,rated,item"], capsys)  # fmt: skip
    assert code == 2 and not (tmp_path / "out").exists()
    line = err.strip().splitlines()[-1]
    assert line == (
        "graphtier: error: --split-relation: expected a relation of the schema (one of user,rates,item, "
        "item,rev_rates,user), found 'user,rated,item'"
    )
    code, _, err = run(["prepare", "manifest", str(manifest), str(tmp_path / "out"), "--edge-split", "0.8,0.1,0.1"],
                       capsys)  # fmt: skip
    assert code == 2 and "--split-relation" in err.strip().splitlines()[-1]


def test_typed_link_batches_pair_the_right_rows(linked: Dataset) -> None:
    link = linked.link
    assert link is not None
    pairs = np.array(link.pairs("train").positives)
    with GraphStore.open(linked, num_threads=1) as store:
        sampler = typed_link_sampler(store, (5, 5), pairs, num_negatives=3, seed=1)
        batch = sampler.sample(np.arange(64), 7)
    src_ids = batch.n_id["user"][batch.src_index]
    dst_ids = batch.n_id["item"][batch.dst_index]
    assert torch.equal(src_ids[:64], torch.from_numpy(pairs[:64, 0]))
    assert torch.equal(dst_ids[:64], torch.from_numpy(pairs[:64, 1]))
    assert torch.equal(src_ids[64:], torch.from_numpy(pairs[:64, 0]).repeat_interleave(3))
    assert batch.label.tolist() == [1.0] * 64 + [0.0] * 192 and int(dst_ids.max()) < 160
    assert batch.excluded_edges > 0
    targets = set(zip(batch.src_index[:64].tolist(), batch.dst_index[:64].tolist()))
    for block in batch.blocks:
        for key, (src_col, dst_col) in ((RATES, (0, 1)), (("item", "rev_rates", "user"), (1, 0))):
            edge_index = block.relations[key].edge_index  # rows: source row, destination row
            edges = set(zip(edge_index[src_col].tolist(), edge_index[dst_col].tolist()))
            assert not edges & targets  # neither direction of a target pair is a message edge
    again = sampler.sample(np.arange(64), 7)
    assert torch.equal(again.dst_index, batch.dst_index)  # (seed, batch id) fixes the negatives


@pytest.mark.parametrize("model", ["rgcn", "rgat", "hsage"])
def test_typed_encoders_beat_popularity(linked: Dataset, model: str) -> None:
    result = train(linked, task="link", model=model, fanouts=(5, 5), hidden=32, heads=2, epochs=3, lr=0.01,
                   batch_size=256, **QUIET)  # fmt: skip
    final = result.report["final"]
    assert final["method"] == "full" and final["epoch"] >= 1
    assert final["test_auc"] > 0.8 and final["test_popularity_auc"] < 0.6
    assert final["test_mrr"] > final["test_popularity_mrr"] + 0.2
    assert final["test_hits@10"] > final["test_popularity_hits@10"]
    assert all(e["valid_mrr"] is not None for e in result.report["epochs"])


def test_cli_trains_typed_links(linked: Dataset, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["train", str(linked.path), "--task", "link", "--model", "hsage", "--epochs", "1",
                          "--fanouts", "4,4", "--hidden", "16", "--num-threads", "1", "--decoder", "mlp", "--quiet"],
                         capsys)  # fmt: skip
    assert code == 0, err
    assert "exact layer-wise embeddings" in out and "popularity test" in out
    code, out, _ = run(["info", str(linked.path), "--json"], capsys)
    split = json.loads(out)["edge_split"]
    assert code == 0 and split["relation"] == list(RATES) and split["reverse"] == "rev_rates"


def test_refusals_are_one_line(
    linked: Dataset, manifest: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(OptionError, match=r"model=.mlp.: link prediction on a typed dataset needs a typed encoder"):
        train(linked, task="link", model="mlp", epochs=1, **QUIET)
    plain = import_manifest(manifest, tmp_path / "plain")
    code, _, err = run(["train", str(plain.path), "--task", "link", "--model", "rgcn", "--epochs", "1"], capsys)
    assert code == 2
    assert (
        err.strip().splitlines()[-1].startswith("graphtier: error: --task link: expected an edge split of one relation")
    )


@pytest.fixture(scope="module")
def saved_link_model(linked: Dataset, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("typed-link-model") / "model.pt"
    train(linked, task="link", model="rgcn", fanouts=(4, 4), hidden=16, epochs=1, save_model=path,
          full_inference=True, **QUIET)  # fmt: skip
    return path


def test_predict_scores_typed_pairs_and_recommends_items(
    linked: Dataset, saved_link_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = load_model(saved_link_model)
    assert saved.link_relation == RATES
    table = predict(saved, linked).logits  # users [0, 240), then items [240, 400)
    assert table.shape == (240 + 160, 16)
    pairs = np.array([[0, 0], [3, 159], [239, 7]])
    np.savetxt(tmp_path / "pairs.txt", pairs, fmt="%d")
    code, _, err = run(["predict", str(linked.path), "--model", str(saved_link_model), "--pairs",
                        str(tmp_path / "pairs.txt"), "--output", str(tmp_path / "scores.npy")], capsys)  # fmt: skip
    assert code == 0, err
    expected = (table[pairs[:, 0]] * table[240 + pairs[:, 1]]).sum(axis=1)  # the dot decoder
    assert np.allclose(np.load(tmp_path / "scores.npy"), expected, atol=1e-5)
    code, _, err = run(["predict", str(linked.path), "--model", str(saved_link_model), "--top-k", "5",
                        "--for-nodes", "0,1,2", "--output", str(tmp_path / "top.npy")], capsys)  # fmt: skip
    assert code == 0, err
    top = np.load(tmp_path / "top.npy")
    assert top.shape == (3, 5) and top.min() >= 0 and top.max() < 160
    rated = _edges(linked, RATES)
    assert not any((u, int(i)) in rated for u, row in enumerate(top) for i in row)  # new items only
    scores = table[:3] @ table[240:].T
    for u, row in enumerate(top):
        unseen = [i for i in range(160) if (u, i) not in rated]
        best = sorted(unseen, key=lambda i: -scores[u, i])[:5]
        assert np.allclose(scores[u, row], scores[u, best], atol=1e-5)
    np.savetxt(tmp_path / "bad.txt", np.array([[0, 160]]), fmt="%d")
    code, _, err = run(["predict", str(linked.path), "--model", str(saved_link_model), "--pairs",
                        str(tmp_path / "bad.txt"), "--output", str(tmp_path / "bad.npy")], capsys)  # fmt: skip
    assert code == 2 and not (tmp_path / "bad.npy").exists()
    assert (
        err.strip()
        .splitlines()[-1]
        .endswith("column 2: expected local ids of item in [0, 160), found values in [160, 160]")
    )


def test_a_relation_within_one_type_splits_and_trains(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    np.save(tmp_path / "paper.npy", rng.standard_normal((120, 8)).astype(np.float32))
    np.save(tmp_path / "author.npy", rng.standard_normal((40, 8)).astype(np.float32))
    cites = np.stack([rng.integers(0, 120, 900), rng.integers(0, 120, 900)], axis=1)
    cites = np.unique(cites[cites[:, 0] != cites[:, 1]], axis=0)
    np.save(tmp_path / "cites.npy", cites)
    np.save(tmp_path / "writes.npy", np.stack([rng.integers(0, 40, 300), rng.integers(0, 120, 300)], axis=1))
    manifest = {
        "nodes": {
            "paper": {"count": 120, "features": str(tmp_path / "paper.npy")},
            "author": {"count": 40, "features": str(tmp_path / "author.npy")},
        },  # fmt: skip
        "edges": [
            {"type": ["paper", "cites", "paper"], "path": str(tmp_path / "cites.npy")},
            {"type": ["author", "writes", "paper"], "path": str(tmp_path / "writes.npy")},
        ],  # fmt: skip
        "target": "paper",
    }
    (tmp_path / "m.json").write_text(json.dumps(manifest))
    ds = import_manifest(tmp_path / "m.json", tmp_path / "ds", add_reverse=True, edge_split="0.8,0.1,0.1",
                         split_relation="cites", seed=3)  # fmt: skip
    link = ds.link
    assert link.meta["relation"] == ["paper", "cites", "paper"] and link.dst_range == (0, 120)
    held = np.concatenate([np.asarray(link.pairs(s).positives) for s in ("valid", "test")])
    assert held.shape[0] + link.pairs("train").num_positives == cites.shape[0]
    remaining = _edges(ds, ("paper", "cites", "paper"))
    assert not any((int(u), int(v)) in remaining for u, v in held)
    negatives = np.asarray(link.pairs("test").negatives)  # pairs of papers, never an edge nor a self-loop
    assert (negatives[:, 0] != negatives[:, 1]).all() and negatives.max() < 120
    every = set(map(tuple, cites.tolist()))
    assert not any(tuple(p) in every for p in negatives.tolist())
    result = train(ds, task="link", model="rgcn", fanouts=(4, 4), hidden=16, epochs=1, **QUIET)
    assert 0.0 <= result.report["final"]["test_auc"] <= 1.0


def test_near_complete_relation_refuses_negatives_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    np.save(tmp_path / "u.npy", np.ones((4, 2), np.float32))
    np.save(tmp_path / "i.npy", np.ones((5, 2), np.float32))
    every = np.array([(u, i) for u in range(4) for i in range(5)])  # complete bipartite: no negative exists
    np.save(tmp_path / "r.npy", every)
    manifest = {"nodes": {"u": {"count": 4, "features": str(tmp_path / "u.npy")},
                          "i": {"count": 5, "features": str(tmp_path / "i.npy")}},
                "edges": [{"type": ["u", "r", "i"], "path": str(tmp_path / "r.npy")}], "target": "u"}  # fmt: skip
    (tmp_path / "m.json").write_text(json.dumps(manifest))
    code, _, err = run(["prepare", "manifest", str(tmp_path / "m.json"), str(tmp_path / "out"), "--edge-split",
                        "0.5,0.25,0.25", "--split-relation", "r", "--eval-negatives", "3"], capsys)  # fmt: skip
    assert code == 2 and not (tmp_path / "out").exists()
    line = err.strip().splitlines()[-1]
    assert line.startswith("graphtier: error: --eval-negatives") and len(err.strip().splitlines()) == 1, err


def test_the_public_loader_gives_typed_link_batches(linked: Dataset) -> None:
    loader = graphtier.Loader(linked, fanouts=(3, 3), batch_size=64, task="link", relation_fanouts="rates=1",
                              num_threads=1, prefetch=0)  # fmt: skip
    try:
        batch = next(iter(loader))
    finally:
        loader.close()
    assert batch.y.shape == (128,) and batch.src_index.shape == (128,) and batch.dst_index.shape == (128,)
    rates = batch.blocks[-1].relations[RATES]  # the seed hop: at most one sampled rating per item (rates=1)
    assert int((rates.rowptr[1:] - rates.rowptr[:-1]).max()) <= 1


def test_reorder_by_link_presample_keeps_every_pair(linked: Dataset, tmp_path: Path) -> None:
    link_seeds = EpochSeeds(task="link")
    scores = graphtier.compute_scores(
        linked, "presample", replay=graphtier.Replay(fanouts=[3, 3], epochs=1, seeds=link_seeds)
    ).scores
    reordered, _ = graphtier.reorder_dataset(linked, tmp_path / "r", scores, score_label="presample")
    perm = np.asarray(reordered.extra["perm"])  # new global id -> old global id; each type in its range
    users, items = linked.schema.node_type("user"), linked.schema.node_type("item")
    to_old = {"user": perm[: users.count], "item": perm[items.offset : items.offset + items.count] - items.offset}
    for split in ("train", "valid", "test"):
        old, new = linked.link.pairs(split), reordered.link.pairs(split)
        back = np.stack(
            [to_old["user"][np.asarray(new.positives)[:, 0]], to_old["item"][np.asarray(new.positives)[:, 1]]], 1
        )
        assert np.array_equal(back, np.asarray(old.positives))
        if split != "train":
            assert np.array_equal(to_old["item"][np.asarray(new.negatives)], np.asarray(old.negatives))
    assert _edges(reordered, RATES) == {
        (int(np.flatnonzero(to_old["user"] == u)[0]), int(np.flatnonzero(to_old["item"] == i)[0]))
        for u, i in _edges(linked, RATES)
    }


def test_fwr_from_link_seeds_predicts_the_typed_link_reads(tmp_path: Path) -> None:
    """The analytic fwr of the pairs and their negatives ranks the rows the typed link sampler reads as the measured
    reads themselves do (measured on this graph: 0.238 of the reads in its top 10% against 0.238 ideal), and better
    than fwr from node seeds (0.197)."""
    ds = synthetic_mag.generate_mag(
        tmp_path / "mag", nodes=2000, feature_dim=8, seed=1, edge_split="0.8,0.1,0.1", split_relation="writes"
    )
    link_seeds = EpochSeeds(task="link", num_negatives=1)
    fwr = graphtier.compute_scores(
        ds, "fwr", replay=graphtier.Replay(fanouts=[2, 2], batch_size=64, seeds=link_seeds)
    ).scores
    node_fwr = graphtier.compute_scores(ds, "fwr", replay=graphtier.Replay(fanouts=[2, 2], batch_size=64)).scores
    reads = count_typed_reads(
        ds.indptr, ds.indices, ds.schema, np.arange(ds.link.pairs("train").num_positives), fanouts=[2, 2],
        batch_size=64, epochs=3, seed=5, sample=link_seeds.sampler(ds, [2, 2], 5),
    ).features  # fmt: skip
    measured, ideal = hit_ratio_curve(fwr, reads, [10, 25]), hit_ratio_curve(reads, reads, [10, 25])
    assert measured["10"] >= 0.97 * ideal["10"] and measured["25"] >= 0.97 * ideal["25"], (measured, ideal)
    assert measured["10"] > hit_ratio_curve(node_fwr, reads, [10])["10"] + 0.02


def test_plan_from_link_seeds(linked: Dataset, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["plan", str(linked.path), "--task", "link", "--fanouts", "3,3", "--gpu-memory", "80GiB",
                          "--budgets", "10%"], capsys)  # fmt: skip
    assert code == 0, err
    assert "user" in out and "item" in out and "(user, rates, item)" in out


def test_typed_link_batches_on_a_device_topology_are_the_cpu_ones(linked: Dataset) -> None:
    """With a tiered topology (here on the CPU: what --sample-on gpu builds on CUDA) the typed link sampler draws
    its neighbourhoods with DeviceNeighborSampler.sample_global (with the schema): the CPU store's batches, tensor for tensor,
    the targets excluded with torch ops."""
    link = linked.link
    assert link is not None
    pairs = np.array(link.pairs("train").positives)
    with GraphStore.open(linked, num_threads=1, seed=3) as store:
        expected = typed_link_sampler(store, (4, 3), pairs, num_negatives=2).sample(np.arange(50), 5)
    topology = make_topology(linked.indptr, linked.indices, device=torch.device("cpu"), topology_budget="30%",
                             log=lambda _: None)  # fmt: skip
    store = GraphStore(linked, None, topology=topology, seed=3, picks="numba")
    batch = typed_link_sampler(store, (4, 3), pairs, num_negatives=2).sample(np.arange(50), 5)
    for name in ("src_index", "dst_index", "label", "pair_ids"):
        assert torch.equal(getattr(batch, name), getattr(expected, name)), name
    assert batch.excluded_edges == expected.excluded_edges > 0
    for t, ids in expected.n_id.items():
        assert torch.equal(batch.n_id[t], ids), t
    for got, want in zip(batch.blocks, expected.blocks):
        assert (got.num_src, got.num_dst) == (want.num_src, want.num_dst)
        for key, rel in want.relations.items():
            assert torch.equal(got.relations[key].rowptr, rel.rowptr) and torch.equal(got.relations[key].col, rel.col)
    assert store.traffic()["topology"].requested > 0  # the device sampler's reads are counted by the topology
