"""The run report written by ``graphtier train --report run.json`` (fields in docs/report-format.md)."""

from __future__ import annotations

import json
import math
import os
import platform
import sys
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
import torch

from graphtier._compile_notice import compile_text
from graphtier._version import __version__
from graphtier.dataset import Dataset
from graphtier.dataset.outputs import atomic_write
from graphtier.dataset.provenance import describe, provenance_of
from graphtier.errors import OptionError
from graphtier.sampling.neighbor.sampler import format_fanouts
from graphtier.train.loop.tally import STAGES

REPORT_VERSION = 1


class NonFiniteLossError(OptionError):
    """The training loss became NaN or infinite: the run stops (one line naming epoch, batch and --lr)."""


def finite_json(value: Any, where: str = "", found: list[str] | None = None) -> Any:
    """``value`` with every NaN or infinite float replaced by None; their paths (``epochs[2].loss``) go to ``found``.

    JSON has no NaN or Infinity: ``json.dumps`` would write invalid JSON for them.
    """
    found = [] if found is None else found
    if isinstance(value, float) and not math.isfinite(value):
        found.append(where)
        return None
    if isinstance(value, dict):
        return {key: finite_json(item, f"{where}.{key}" if where else str(key), found) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(item, f"{where}[{i}]", found) for i, item in enumerate(value)]
    return value


def format_bytes(count: float) -> str:
    """``1536`` -> ``"1.5 KiB"`` (binary units, as everywhere in graphtier's output)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if count < 1024 or unit == "TiB":
            return f"{count:.1f} {unit}" if unit != "B" else f"{int(count)} B"
        count /= 1024
    return f"{count:.1f} TiB"


def format_accuracy(value: float | None) -> str:
    """``0.81234`` -> ``"0.8123"``; None (not evaluated) -> ``"-"``."""
    return "-" if value is None else f"{value:.4f}"


def inference_summary(final: dict[str, Any], config: dict[str, Any]) -> str:
    """How the final accuracies were measured, e.g. ``"sampled inference, fanouts 25,10; exact: --full-inference"``.

    ``final``: the report's ``final`` (``method`` ``full`` or ``sampled``); ``config``: its ``config``. Sampled
    inference draws neighbours at random (the eval fanouts), so it differs from exact inference (``predict``).
    """
    if config.get("model") == "mlp":  # no neighbours, so no layer-wise pass whatever the method
        return "features only, no neighbours"
    if final.get("method") == "full":
        return "exact layer-wise inference, all neighbours"
    fanouts = format_fanouts(config.get("eval_fanouts") or config["fanouts"])
    if config.get("temporal"):
        return f"sampled at each node's time, {config['temporal']} neighbours at or before it, fanouts {fanouts}"
    if config.get("sampler") == "shadow":
        return f"sampled inference, ShaDow subgraphs, fanouts {fanouts}"
    return f"sampled inference, fanouts {fanouts}; exact: --full-inference"


LINK_METRICS = ("rmse", "mae", "auc", "ap", "mrr")


def link_metrics_text(values: dict[str, Any], prefix: str) -> str:
    """``"auc 0.9123  ap 0.9234  hits@10 0.51"`` from the keys ``{prefix}_auc`` ... present in ``values``."""
    names = [m for m in LINK_METRICS if f"{prefix}_{m}" in values]
    names += sorted(key[len(prefix) + 1 :] for key in values if key.startswith(f"{prefix}_hits@"))
    return "  ".join(f"{name} {format_accuracy(values[f'{prefix}_{name}'])}" for name in names)


def final_summary(final: dict[str, Any], config: dict[str, Any]) -> str:
    """The final line of ``graphtier train``: accuracies (link metrics), how they were measured, and the baseline
    (majority class; popularity for links)."""
    if config.get("task") == "link":
        picked = f" by {final['best_epoch_by'].replace('_', ' ')}" if final.get("best_epoch_by") else ""
        how = {
            "temporal": f"sampled at each pair's time, {config.get('temporal')} neighbours strictly earlier",
            "static snapshot": "sampled in the training period's graph",
            "sampled": "sampled neighbourhoods, --eval-fanouts; the model reads edge inputs",
        }.get(final.get("method", ""), "exact layer-wise embeddings, all neighbours")
        line = (
            f"final (best epoch {final['epoch']}{picked}): test {link_metrics_text(final, 'test')}  "
            f"valid {link_metrics_text(final, 'valid')} ({how})"
        )
        popularity = link_metrics_text(final, "test_popularity")
        edgebank = link_metrics_text(final, "test_edgebank")
        mean = link_metrics_text(final, "test_mean")
        majority = link_metrics_text(final, "test_majority")
        return (
            line
            + (f"  popularity test {popularity} (score = destination degree)" if popularity else "")
            + (f"  EdgeBank test {edgebank} (score = the edge was seen before)" if edgebank else "")
            + (f"  train-mean test {mean} (prediction = the training pairs' mean)" if mean else "")
            + (f"  majority test {majority} (one score for every pair)" if majority else "")
        )
    line = (
        f"final (best epoch {final['epoch']}): valid_acc {format_accuracy(final['valid_acc'])}  "
        f"test_acc {format_accuracy(final['test_acc'])}{f1_text(final, 'test')} ({inference_summary(final, config)})"
    )
    if final.get("test_majority_acc") is not None:
        line += (
            f"  majority-class test_acc {format_accuracy(final['test_majority_acc'])}"
            f"{f1_text(final, 'test_majority')} (class {final['majority_class']}, the train split's most common)"
        )
    return line


def f1_text(values: dict[str, Any], prefix: str) -> str:
    """``"  macro-F1 0.6123  micro-F1 0.7012"`` from ``{prefix}_macro_f1`` / ``_micro_f1`` ("" when absent)."""
    if f"{prefix}_macro_f1" not in values:
        return ""
    return (
        f"  macro-F1 {format_accuracy(values[f'{prefix}_macro_f1'])}"
        f"  micro-F1 {format_accuracy(values[f'{prefix}_micro_f1'])}"
    )


def epoch_summary(record: dict[str, Any], epochs: int) -> str:
    """One line per epoch: loss, accuracies, throughput and where the time went."""
    stages = record["stage_seconds"]
    times = " ".join(f"{name} {stages[name]:.2f}s" for name in STAGES)
    if "valid_acc" in record:
        scores = f"valid {format_accuracy(record['valid_acc'])}  test {format_accuracy(record['test_acc'])}"
    else:
        scores = f"valid {link_metrics_text(record, 'valid')}"
    compiled = compile_text(record.get("compile_seconds") or 0.0)
    return (
        f"epoch {record['epoch']}/{epochs}  loss {record['loss']:.4f}  train {record['train_acc']:.4f}  "
        f"{scores}  |  "
        f"{record['batches_per_s']:.1f} batch/s{f' ({compiled})' if compiled else ''}  {times}  "
        f"features {format_bytes(record['feature_bytes'])}"
        + (
            f"  topology {format_bytes(sum(record['topology_bytes_by_tier'].values()))}"
            if sum((record.get("topology_bytes_by_tier") or {}).values())
            else ""
        )
        + edge_bytes_text(record.get("edge_feature_bytes_by_tier"))
    )


def edge_bytes_text(tiers: dict[str, int] | None) -> str:
    """``"  edge features 1.2 MB (host 1.0 MB, disk 200.0 KB)"``: the epoch's edge feature bytes and the tiers that
    served them ("" for a run without edge features)."""
    if tiers is None:
        return ""
    served = ", ".join(f"{tier} {format_bytes(nbytes)}" for tier, nbytes in tiers.items() if nbytes)
    return f"  edge features {format_bytes(sum(tiers.values()))}" + (f" ({served})" if served else "")


def environment_info(device: torch.device) -> dict[str, Any]:
    """Versions, device and thread counts of this process."""
    import torch_geometric

    info: dict[str, Any] = {
        "graphtier": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torch_geometric": torch_geometric.__version__,
        "numba": numba.__version__,
        "numpy": np.__version__,
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "numba_threads": numba.get_num_threads(),
    }
    return info


@dataclass
class RunReport:
    """Accumulates a training run's configuration, per-epoch records and final result."""

    config: dict[str, Any]
    dataset: Dataset
    environment: dict[str, Any]
    epochs: list[dict[str, Any]] = field(default_factory=list)
    final: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float = 0.0
    resumed_from: dict[str, Any] | None = None
    balancer: Any = None
    devices: list[str] | None = None
    ranks: list[dict[str, Any]] = field(default_factory=list)

    def add_rank_totals(self, epoch_ranks: list[dict[str, Any]]) -> None:
        """Add one epoch's per-rank seeds and seconds to the run totals (multi-process runs)."""
        if not self.ranks:
            self.ranks = [dict(r) for r in epoch_ranks]
            return
        for total, epoch in zip(self.ranks, epoch_ranks):
            for key in ("seeds", "compute_seconds", "wait_seconds"):
                total[key] += epoch[key]

    def to_dict(self) -> dict[str, Any]:
        ds = self.dataset

        def split_size(idx: np.ndarray | None) -> int:
            return 0 if idx is None else int(idx.shape[0])

        out = {
            "report_version": REPORT_VERSION,
            "config": self.config,
            "dataset": {
                "path": str(ds.path),
                "name": ds.name,
                "num_nodes": ds.num_nodes,
                "num_edges": ds.num_edges,
                "feature_dim": ds.feature_dim,
                "feature_dtype": ds.meta.get("feature_dtype"),
                "num_classes": ds.num_classes,
                "node_order": ds.meta.get("node_order"),
                "train_size": split_size(ds.train_idx),
                "valid_size": split_size(ds.valid_idx),
                "test_size": split_size(ds.test_idx),
                "provenance": provenance_of(ds.meta),
                "notes": describe(ds.meta),
            },
            "environment": self.environment,
            "resumed_from": self.resumed_from,
            "epochs": self.epochs,
            "final": self.final,
            "wall_seconds": self.wall_seconds,
        }
        if self.devices is not None:
            out["devices"] = self.devices
            out["ranks"] = self.ranks
            balancer = self.balancer
            out["balancer"] = {
                "mode": balancer.mode,
                "final_shares": [float(v) for v in balancer.shares],
                "final_cpu_share": balancer.cpu_share(),
                "ratio_history": balancer.ratio_history,
            }
        return out

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the report as JSON, atomically (temporary file + rename).

        A NaN or infinite number is written as null and its field listed in ``non_finite``.
        """
        found: list[str] = []
        out = finite_json(self.to_dict(), found=found)
        if found:
            out["non_finite"] = found
        text = json.dumps(out, indent=2, allow_nan=False) + "\n"
        atomic_write(path, lambda tmp: tmp.write_text(text))
