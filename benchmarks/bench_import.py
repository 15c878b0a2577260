"""Import throughput and peak memory of ``graphtier prepare edgelist`` (and csr-npz).

Cases:
  * soc-Slashdot0902 (gzip, 948k edges) from ../shared/data, against a baseline measured in the
    same run: ``np.loadtxt`` + ``graphtier.dataset.csc.edges_to_csc``;
  * cnr-2000 (csr-npz, 3.2M edges);
  * a generated 100M-edge power-law edge list (plain text, ~1.5 GB under /tmp/graphtier-data/),
    against ``np.loadtxt`` on its first 2M lines (throughput only: a full np.loadtxt would take
    ~30 GB of RAM and many minutes).

Each import runs in a fresh process that reports its own peak RSS (``VmHWM``) and the RSS it
had after importing modules and warming the numba caches, so the memory attributable to the
import is ``peak - base``; it is compared with the final ``indptr + indices`` size.

Run: ``flock /tmp/graphtier-bigjob.lock python benchmarks/bench_import.py [--edges 100000000]``.
Prints a table and writes benchmarks/results/import.json. The machine may be shared with other
jobs, so timings are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numba
import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO / ".." / "shared" / "data"
DATA = Path("/tmp/graphtier-data/bench-import")
RESULTS = REPO / "benchmarks" / "results" / "import.json"

_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
import numpy as np
kind, source, output = sys.argv[1], sys.argv[2], sys.argv[3]
options = json.loads(sys.argv[4])
def rss_mib():
    # VmHWM: this process image's peak RSS (ru_maxrss can carry the parent's peak over fork + exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
if kind == "baseline":
    import gzip
    from graphtier.dataset.csc import edges_to_csc
    edges_to_csc(np.array([0, 1]), np.array([1, 0]), 2)  # warm numba
    base = rss_mib()
    t = time.perf_counter()
    opener = gzip.open if source.endswith(".gz") else open
    with opener(source, "rt") as f:
        edges = np.loadtxt(f, dtype=np.int64, comments="#", max_rows=options.get("max_rows"))
    n = int(edges.max()) + 1
    indptr, indices = edges_to_csc(edges[:, 0], edges[:, 1], n)
    seconds = time.perf_counter() - t
    result = {"edges": int(edges.shape[0]), "nodes": n, "seconds": seconds,
              "final_mib": (indptr.nbytes + indices.nbytes) / 2**20}
else:
    from graphtier.dataset.importers import ImportOptions, import_csr_npz, import_edgelist
    warm = Path(output + ".warm.txt")
    warm.write_text("0 5\n5 1\n")
    import_edgelist(warm, output + ".warm", overwrite=True, options=ImportOptions(undirected=True))
    base = rss_mib()
    t = time.perf_counter()
    if kind == "edgelist":
        ds = import_edgelist(source, output, overwrite=True, options=ImportOptions(**options))
    else:
        ds = import_csr_npz(source, output, overwrite=True, options=ImportOptions(**options))
    seconds = time.perf_counter() - t
    result = {"edges": ds.num_edges, "nodes": ds.num_nodes, "seconds": seconds,
              "final_mib": (ds.indptr.nbytes + ds.indices.nbytes) / 2**20,
              "remapped": "node_ids" in ds.extra}
result.update(peak_rss_mib=rss_mib(), base_rss_mib=base)
print("RESULT " + json.dumps(result))
"""


def run_child(kind: str, source: Path, output: Path, options: dict) -> dict:
    """Run one import in a fresh Python process and return its measurements."""
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, str(source), str(output), json.dumps(options)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"child {kind} {source} failed:\n{proc.stderr[-3000:]}")
    result = json.loads(lines[-1][len("RESULT ") :])
    result["edges_per_s"] = result["edges"] / result["seconds"]
    result["import_mib"] = result["peak_rss_mib"] - result["base_rss_mib"]
    result["import_over_final"] = result["import_mib"] / result["final_mib"] if result["final_mib"] else None
    result["peak_over_final"] = result["peak_rss_mib"] / result["final_mib"] if result["final_mib"] else None
    return result


# ---------------------------------------------------------------------------- generated edge list


@numba.njit(nogil=True)
def _write_int(value: int, out: np.ndarray, pos: int) -> int:
    if value == 0:
        out[pos] = 48
        return pos + 1
    digits = 0
    v = value
    while v > 0:
        digits += 1
        v //= 10
    for k in range(digits - 1, -1, -1):
        out[pos + k] = 48 + value % 10
        value //= 10
    return pos + digits


@numba.njit(nogil=True)
def _format_pairs(src: np.ndarray, dst: np.ndarray, out: np.ndarray) -> int:
    pos = 0
    for i in range(src.shape[0]):
        pos = _write_int(src[i], out, pos)
        out[pos] = 9
        pos = _write_int(dst[i], out, pos + 1)
        out[pos] = 10
        pos += 1
    return pos


def generate_power_law_edges(path: Path, num_edges: int, num_nodes: int, seed: int = 0) -> None:
    """Write ``num_edges`` tab-separated edges whose endpoints follow a power law (hubs), in 5M-edge chunks."""
    if path.exists() and path.stat().st_size > 0 and path.with_suffix(".done").exists():
        return
    rng = np.random.default_rng(seed)
    relabel = rng.permutation(num_nodes)  # hubs spread over the id range
    chunk = 5_000_000
    with open(path, "wb") as f:
        f.write(b"# generated power-law edge list\n")
        for start in range(0, num_edges, chunk):
            k = min(chunk, num_edges - start)
            src = relabel[(num_nodes * rng.random(k) ** 3.0).astype(np.int64)]
            dst = relabel[(num_nodes * rng.random(k) ** 2.0).astype(np.int64)]
            buf = np.empty(k * 2 * 21, dtype=np.uint8)
            f.write(buf[: _format_pairs(src, dst, buf)].tobytes())
    path.with_suffix(".done").write_text("ok\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", type=int, default=100_000_000, help="edges of the generated list (0: skip)")
    parser.add_argument("--nodes", type=int, default=10_000_000, help="node id range of the generated list")
    parser.add_argument(
        "--baseline-rows",
        type=int,
        default=2_000_000,
        help="np.loadtxt baseline on the first N lines of the generated list",
    )
    args = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    rows = []

    slashdot = (SHARED / "soc-slashdot0902" / "soc-Slashdot0902.txt.gz").resolve()
    if slashdot.exists():
        ours = run_child("edgelist", slashdot, DATA / "slashdot", {})
        dedup = run_child(
            "edgelist", slashdot, DATA / "slashdot-undirected", {"undirected": True, "drop_self_loops": True}
        )
        base = run_child("baseline", slashdot, DATA / "unused", {})
        rows += [
            ("soc-Slashdot0902 (gz)", "graphtier edgelist", ours, ours["edges_per_s"] / base["edges_per_s"]),
            ("soc-Slashdot0902 (gz)", "... --undirected --drop-self-loops", dedup, None),
            ("soc-Slashdot0902 (gz)", "baseline np.loadtxt + edges_to_csc", base, 1.0),
        ]
    cnr = (SHARED / "cnr-2000" / "cnr-2000.csr.npz").resolve()
    if cnr.exists():
        rows.append(("cnr-2000 (npz)", "graphtier csr-npz", run_child("csr", cnr, DATA / "cnr", {}), None))

    generated = None
    if args.edges:
        generated = DATA / f"powerlaw-{args.edges}.txt"
        t = time.perf_counter()
        generate_power_law_edges(generated, args.edges, args.nodes)
        print(f"generated {generated} ({generated.stat().st_size / 2**30:.2f} GiB) in {time.perf_counter() - t:.0f} s")
        ours = run_child("edgelist", generated, DATA / "powerlaw", {})
        base = run_child("baseline", generated, DATA / "unused", {"max_rows": args.baseline_rows})
        rows += [
            (
                f"power-law {args.edges / 1e6:.0f}M (text)",
                "graphtier edgelist",
                ours,
                ours["edges_per_s"] / base["edges_per_s"],
            ),
            (f"power-law first {args.baseline_rows / 1e6:.0f}M lines", "baseline np.loadtxt + edges_to_csc", base, 1.0),
        ]

    header = (
        f"{'input':36} {'method':44} {'edges':>12} {'nodes':>11} {'s':>7} {'Medges/s':>9} {'vs base':>8} "
        f"{'final MiB':>9} {'peak MiB':>9} {'import MiB':>10} {'imp/final':>9}"
    )
    print(header)
    print("-" * len(header))
    for name, method, r, ratio in rows:
        print(
            f"{name:36} {method:44} {r['edges']:>12,} {r['nodes']:>11,} {r['seconds']:>7.2f} "
            f"{r['edges_per_s'] / 1e6:>9.2f} {('%.1fx' % ratio) if ratio else '':>8} {r['final_mib']:>9.1f} "
            f"{r['peak_rss_mib']:>9.1f} {r['import_mib']:>10.1f} {r['import_over_final'] or 0:>9.2f}"
        )
    print("peak = child's VmHWM; import = peak - RSS after imports/warm-up; final = indptr + indices bytes.")
    print("Shared machine: other jobs may run at the same time, timings are noisy.")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "date": time.strftime("%Y-%m-%d"),
                "machine": f"{os.cpu_count()} CPUs",
                "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
                "rows": [{"input": n, "method": m, "ratio_vs_baseline": ratio, **r} for n, m, r, ratio in rows],
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
