"""The sums one rank accumulates over an epoch's training steps, and the epoch record made from them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphtier.train.loop.pipeline import PreparedBatch

# Main-thread stages wait + transfer + train + other add up to total; sample and extract are the
# producer thread's busy time, which overlaps them (docs/report-format.md).
STAGES = ("sample", "extract", "wait", "transfer", "train", "other", "total")


@dataclass
class EpochTally:
    """The sums one rank accumulates over an epoch's training steps."""

    stage: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    loss_sum: float = 0.0
    correct: int = 0
    seen: int = 0
    feature_bytes: int = 0
    sampled_edges: int = 0

    def add(self, item: PreparedBatch, wait_seconds: float, transfer_seconds: float, train_seconds: float) -> None:
        """Count one step's stage times and bytes (loss and accuracy are added by the caller)."""
        self.stage["sample"] += item.sample_seconds
        self.stage["extract"] += item.extract_seconds
        self.stage["wait"] += wait_seconds
        self.stage["transfer"] += transfer_seconds
        self.stage["train"] += train_seconds
        self.feature_bytes += item.feature_bytes
        self.sampled_edges += item.batch.num_sampled_edges

    def record(
        self, batches: int, total_seconds: float, loss_sum: float, correct: float, seen: float
    ) -> dict[str, Any]:
        """The epoch's report entry from these sums and the (possibly all-rank) loss/accuracy totals."""
        self.stage["total"] = total_seconds
        # everything else the training loop spent: bookkeeping, progress, producer start/stop
        # (and, in multi-process runs, the gradient all-reduce and the optimizer step)
        busy = self.stage["wait"] + self.stage["transfer"] + self.stage["train"]
        self.stage["other"] = max(0.0, total_seconds - busy)
        return {
            "loss": loss_sum / max(seen, 1),
            "train_acc": correct / max(seen, 1),
            "stage_seconds": self.stage,
            "feature_bytes": self.feature_bytes,
            "batches": batches,
            "sampled_edges": self.sampled_edges,
            "batches_per_s": batches / total_seconds if total_seconds > 0 else 0.0,
        }
