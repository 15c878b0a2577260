"""graphtier reorder on a dataset with edge times (issue 38): the times follow their edges and
edge_time_order is rebuilt; the (original src, original dst, time) triples are unchanged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphtier import Dataset
from graphtier.dataset.csc import csc_to_edges
from graphtier.dataset.importers.formats.edgelist import import_edgelist
from tests.dataset.importers.helpers import run_cli


def triples(dataset: Dataset) -> list[tuple[int, int, int]]:
    """(original src, original dst, time) of every stored edge, sorted."""
    ids = np.asarray(dataset.extra["perm"]) if "perm" in dataset.extra else np.arange(dataset.num_nodes)
    src, dst = csc_to_edges(dataset.indptr, dataset.indices)
    return sorted(zip(ids[src].tolist(), ids[dst].tolist(), np.asarray(dataset.edge_time).tolist()))


@pytest.mark.parametrize("score", ["degree", "rpr"])
def test_reorder_keeps_the_timed_edges(tmp_path: Path, score: str) -> None:
    rng = np.random.default_rng(7)
    n, m = 200, 3000
    src, dst = rng.integers(0, n, m) ** 2 % n, rng.integers(0, n, m)  # skewed degrees: a real reorder
    times = rng.integers(0, 50, m)  # many ties and repeated (src, dst) pairs with different times
    path = tmp_path / "e.txt"
    path.write_text("".join(f"{s} {d} {t}\n" for s, d, t in zip(src, dst, times)))
    source = import_edgelist(path, tmp_path / "d", time_column=2, keep_duplicates=True, num_nodes=n, time_unit="s")
    result = run_cli("reorder", str(source.path), str(tmp_path / "r"), "--score", score)
    assert result.returncode == 0, result.stderr
    reordered = Dataset.open(tmp_path / "r")
    assert not np.array_equal(np.asarray(reordered.extra["perm"]), np.arange(n))
    assert triples(reordered) == triples(source)
    assert reordered.meta["edge_time"] == source.meta["edge_time"]
    order, times_new, indptr = np.asarray(reordered.edge_time_order), np.asarray(reordered.edge_time), reordered.indptr
    for v in range(n):
        positions = np.arange(indptr[v], indptr[v + 1])
        np.testing.assert_array_equal(order[positions], positions[np.lexsort((positions, times_new[positions]))])
