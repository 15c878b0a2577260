"""`graphtier reorder` keeps a dataset's edge split: every link file is mapped through the permutation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset import Dataset
from graphtier.dataset.synthetic.generate import generate
from graphtier.errors import DatasetError
from graphtier.graph.reorder import reorder_dataset
from graphtier.graph.scores import degree_scores
from tests.cli.helpers import run


@pytest.mark.parametrize("k", [0, 4])
def test_reordered_pairs_map_back_to_the_original_pairs(tmp_path: Path, k: int, capsys) -> None:
    source = generate(
        tmp_path / "g", nodes=400, avg_degree=6, feature_dim=2, edge_split="0.8,0.1,0.1", eval_negatives=k
    )
    code, _, err = run(["reorder", str(source.path), str(tmp_path / "r"), "--score", "degree"], capsys)
    assert code == 0, err
    reordered = Dataset.open(tmp_path / "r")  # validates the link files
    perm = np.load(tmp_path / "r" / "perm.npy")
    assert not np.array_equal(perm, np.arange(400))
    assert reordered.meta["link"] == source.meta["link"]
    for split in ("train", "valid", "test"):
        old, new = source.link.pairs(split), reordered.link.pairs(split)
        np.testing.assert_array_equal(perm[new.positives], old.positives)
        if split != "train":
            assert new.per_positive == (k > 0)
            np.testing.assert_array_equal(perm[new.negatives], old.negatives)
    # held-out edges stay out of the reordered graph, train pairs stay in
    src = np.asarray(reordered.indices, np.int64)
    dst = np.repeat(np.arange(400), np.diff(reordered.indptr))
    keys = set((dst * 400 + src).tolist())
    for s, d in reordered.link.pairs("test").positives.tolist():
        assert d * 400 + s not in keys and s * 400 + d not in keys
    for s, d in reordered.link.pairs("train").positives.tolist():
        assert d * 400 + s in keys


def test_reorder_refuses_a_partial_destination_range(tmp_path: Path) -> None:
    source = generate(tmp_path / "g", nodes=300, avg_degree=4, feature_dim=0, edge_split="0.8,0.1,0.1")
    meta_path = source.path / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["link"]["dst_range"] = [100, 300]
    meta_path.write_text(json.dumps(meta))
    dataset = Dataset.open(source.path)
    with pytest.raises(DatasetError, match=r"node range \[100, 300\] .* expected \[0, 300\] to reorder"):
        reorder_dataset(dataset, tmp_path / "r", degree_scores(dataset.indptr, dataset.indices), score_label="degree")
    assert not (tmp_path / "r").exists()
