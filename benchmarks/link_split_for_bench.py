"""Write a copy of an undirected dataset's graph with a random edge split (link_*.npy + meta "link"), for the
link-tiering benchmark (``bench_hotness.py --task link``).

Each undirected edge ``{u, v}`` (u < v) goes to train / valid / test by ``--fractions``; valid and test edges leave
the graph in both directions (the message-passing graph is the train edges); ``link_train.npy`` lists each train
edge once as ``(u, v)``. No evaluation negatives are written (the tiering tools only read the train pairs).
Features, labels and the node split are not copied. Once ``graphtier generate --edge-split`` exists, it makes
the same kind of dataset.

    python benchmarks/link_split_for_bench.py /tmp/linktier/g200k /tmp/linktier/g200k-link --fractions 0.85,0.05,0.1
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from graphtier.dataset.csc import csc_to_edges, edges_to_csc
from graphtier.dataset.format import Dataset
from graphtier.dataset.link_split import LinkPairs, LinkSplit
from graphtier.dataset.writer import DatasetWriter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--fractions", default="0.85,0.05,0.1")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    fractions = [float(f) for f in args.fractions.split(",")]
    data = Dataset.open(args.source)
    src, dst = csc_to_edges(data.indptr, data.indices)
    once = src < dst
    pairs = np.stack([src[once], dst[once]], axis=1)
    rng = np.random.default_rng(args.seed)
    pairs = pairs[rng.permutation(pairs.shape[0])]
    n_valid = int(round(fractions[1] * pairs.shape[0]))
    n_test = int(round(fractions[2] * pairs.shape[0]))
    valid, test, train = pairs[:n_valid], pairs[n_valid : n_valid + n_test], pairs[n_valid + n_test :]
    indptr, indices = edges_to_csc(
        np.concatenate([train[:, 0], train[:, 1]]), np.concatenate([train[:, 1], train[:, 0]]), data.num_nodes
    )
    with DatasetWriter(args.output) as writer:
        writer.save("indptr", indptr)
        writer.save("indices", indices.astype(np.asarray(data.indices).dtype))
        split = LinkSplit(
            {
                "eval_negatives": 0,
                "dst_range": [0, data.num_nodes],
                "undirected": True,
                "method": "random",
                "fractions": fractions,
                "seed": args.seed,
            },
            {"train": LinkPairs(train), "valid": LinkPairs(valid), "test": LinkPairs(test)},
        )
        meta = {
            "name": f"{data.name}-link",
            "num_nodes": data.num_nodes,
            "num_edges": int(indices.shape[0]),
            "directed": False,
            "feature_dim": 0,
            "feature_dtype": None,
            "num_classes": 0,
            "source": {"kind": "link_split_for_bench", "from": str(args.source)},
            "link": split.save(writer),
        }
        writer.finish(meta)
    print(f"wrote {args.output}: {train.shape[0]:,} train / {n_valid:,} valid / {n_test:,} test pairs")


if __name__ == "__main__":
    main()
