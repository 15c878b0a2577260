"""Block aggregation kernels, forward + backward, on the blocks of real sampled mini-batches.

For each block of a GraphSAGE mini-batch (batch 1024, fanouts 15,10,5 on the ``bench_epoch`` graph)
it times ``out = A @ x`` (the mean over sampled neighbours, 128 features) and the backward
``grad_x = A^T @ grad_out`` with:

* ``pyg-edge``: PyG's message path, what SAGEConv did before (``x[src]`` per edge, scatter-add by
  destination; backward by autograd: gather by destination, scatter-add by source);
* ``torch-csr``: ``torch.sparse.mm`` with a CSR tensor (and the transposed CSR for the backward);
* ``numba-1`` / ``numba-N``: graphtier's kernel (:mod:`graphtier.train.nn.aggregate`) on 1 and N threads.

The CSR build (``csr``) and transpose (``transpose``) are timed once per block: the training producer
thread builds both off the training loop. Prints a table (median milliseconds of ``--repeats``) and
writes benchmarks/results/aggregate.json.

    python benchmarks/bench_aggregate.py [--dataset /tmp/graphtier-bench-epoch/g1000000] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Callable

import torch

from graphtier.dataset.format import Dataset
from graphtier.sampling import NeighborSampler
from graphtier.sampling.batch import Block
from graphtier.train.nn.aggregate import _spmm_torch, aggregate, block_csr, mean_weights

RESULTS = Path(__file__).resolve().parent / "results" / "aggregate.json"


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up (JIT compile, allocator)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000.0 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=Path("/tmp/graphtier-bench-epoch/g1000000"))
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, default=RESULTS)
    args = parser.parse_args()
    ds = Dataset.open(args.dataset)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    seeds = ds.split("train")[: args.batch_size]
    batch = NeighborSampler(ds.indptr, ds.indices, fanouts, seed=0, num_threads=1).sample(seeds, 0)
    rows = []
    print(f"{'block':5s} {'dst':>8s} {'src':>8s} {'edges':>9s} {'method':10s} {'fwd ms':>8s} {'bwd ms':>8s}")
    for index, blk in enumerate(batch.blocks):
        # the block is a CSR already: what is built per block is each edge's row, the transpose and the weights
        csr_ms = median_ms(lambda: block_csr(Block(blk.rowptr, blk.col, blk.num_src)), args.repeats)
        csr = block_csr(blk)
        transpose_ms = median_ms(lambda: block_csr(Block(blk.rowptr, blk.col, blk.num_src)).transposed(), 1)
        csr.transposed()
        weight = mean_weights(csr, torch.float32)
        x = torch.randn(blk.num_src, args.dim)
        grad = torch.randn(blk.num_dst, args.dim)
        src, dst = blk.edge_index
        colptr, rows_t, order = csr.transposed()
        weight_t = weight[order]
        edge_weight = weight  # edge_index is in CSR order

        def edge_forward() -> torch.Tensor:
            out = torch.zeros(blk.num_dst, args.dim)
            return out.index_add_(0, dst, x.index_select(0, src) * edge_weight.unsqueeze(1))

        def edge_backward() -> torch.Tensor:
            out = torch.zeros(blk.num_src, args.dim)
            return out.index_add_(0, src, grad.index_select(0, dst) * edge_weight.unsqueeze(1))

        methods: dict[str, tuple[Callable[[], object], Callable[[], object], int]] = {
            "pyg-edge": (edge_forward, edge_backward, args.threads),
            "torch-csr": (
                lambda: _spmm_torch(csr.rowptr, csr.col, weight, None, x, csr.num_dst),
                lambda: _spmm_torch(colptr, rows_t, weight_t, None, grad, csr.num_src),
                args.threads,
            ),
            "numba-1": (lambda: aggregate(x, csr, weight), None, 1),
            f"numba-{args.threads}": (lambda: aggregate(x, csr, weight), None, args.threads),
        }
        reference = edge_forward()
        for name, (forward, backward, threads) in methods.items():
            torch.set_num_threads(threads)
            if backward is None:
                xg = x.clone().requires_grad_(True)

                def numba_backward(xg: torch.Tensor = xg) -> None:
                    xg.grad = None
                    aggregate(xg, csr, weight).backward(grad)

                fwd_ms = median_ms(forward, args.repeats)
                both_ms = median_ms(numba_backward, args.repeats)
                bwd_ms = both_ms - fwd_ms
            else:
                fwd_ms = median_ms(forward, args.repeats)
                bwd_ms = median_ms(backward, args.repeats)
            error = float((torch.as_tensor(forward()) - reference).abs().max())
            rows.append(
                {
                    "block": index,
                    "num_dst": blk.num_dst,
                    "num_src": blk.num_src,
                    "edges": blk.num_edges,
                    "method": name,
                    "threads": threads,
                    "forward_ms": fwd_ms,
                    "backward_ms": bwd_ms,
                    "max_abs_diff_vs_edge": error,
                    "csr_build_ms": csr_ms,
                    "transpose_ms": transpose_ms,
                }
            )
            print(
                f"{index:5d} {blk.num_dst:8d} {blk.num_src:8d} {blk.num_edges:9d} {name:10s} "
                f"{fwd_ms:8.1f} {bwd_ms:8.1f}",
                flush=True,
            )
        print(f"      csr build {csr_ms:.1f} ms, transpose {transpose_ms:.1f} ms (producer thread)")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "date": time.strftime("%Y-%m-%d"),
                "machine": f"{platform.node()} {os.cpu_count()} cores",
                "dataset": str(args.dataset),
                "fanouts": args.fanouts,
                "batch_size": args.batch_size,
                "dim": args.dim,
                "torch": torch.__version__,
                "load_average": os.getloadavg(),
                "rows": rows,
            },
            indent=2,
        )
    )
    print(f"saved {args.json}")


if __name__ == "__main__":
    main()
