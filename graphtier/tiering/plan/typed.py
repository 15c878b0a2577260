"""The capacity plan of a typed dataset: one GPU budget split across node types and one across relations.

For each candidate GPU feature budget, the budget is filled across every type's feature table by measured
reads per byte (:func:`graphtier.memory.plan.typed_budget.split_feature_budget`; each table's GPU tier a prefix of
its rows, as after ``graphtier reorder``), and the reads each type's GPU prefix serves are counted from a replay
of the typed sampler (:mod:`graphtier.tiering.typed_reads`). The topology budget is split across relations the
same way (:func:`~graphtier.memory.plan.typed_budget.split_topology_budget`, by ``indices`` entries read per byte of
each list). Budgets are bytes, a fraction of all feature (topology: ``indices``) bytes, or ``auto`` = the GPU's
usable bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.format import Dataset
from graphtier.dataset.schema import RelationType
from graphtier.memory.plan.placement import format_bytes, parse_budget
from graphtier.memory.plan.typed_budget import TypeTable, relation_tables, split_feature_budget, split_relation_rows
from graphtier.tiering.plan.edges import EdgeFeaturePlan, format_edge_plan, plan_edge_features
from graphtier.tiering.reads import SampledReads
from graphtier.tiering.replay import DEFAULT_REPLAY, Replay, replay_reads


@dataclass(frozen=True)
class TypedBudgetRow:
    """One candidate budget: GPU rows, bytes and reads served per node type (reads per epoch)."""

    budget: str
    gpu_rows: dict[str, int]
    gpu_bytes: dict[str, int]
    gpu_reads: dict[str, float]

    @property
    def total_bytes(self) -> int:
        return sum(self.gpu_bytes.values())

    @property
    def total_gpu_reads(self) -> float:
        return float(sum(self.gpu_reads.values()))


@dataclass
class TypedPlan:
    """A typed dataset's plan: per type its table (rows, row bytes, reads per epoch), one row per budget, and
    the topology's GPU lists, bytes and entry reads per relation (``topology_*``)."""

    table_rows: dict[str, int]
    row_bytes: dict[str, int]
    reads: dict[str, float]
    budgets: list[TypedBudgetRow]
    topology_budget: str
    topology_rows: dict[RelationType, int] = field(default_factory=dict)
    topology_bytes: dict[RelationType, int] = field(default_factory=dict)
    topology_gpu_entries: dict[RelationType, float] = field(default_factory=dict)
    topology_entries: dict[RelationType, float] = field(default_factory=dict)
    edges: EdgeFeaturePlan | None = None

    def to_json(self) -> dict[str, object]:
        """The plan as plain JSON types (relations as ``src___name___dst``)."""

        def key(rel: RelationType) -> str:
            return "___".join(rel)

        return {
            "types": {
                name: {"rows": self.table_rows[name], "row_bytes": self.row_bytes[name], "reads": self.reads[name]}
                for name in self.table_rows
            },
            "budgets": [
                {"budget": b.budget, "gpu_rows": b.gpu_rows, "gpu_bytes": b.gpu_bytes, "gpu_reads": b.gpu_reads}
                for b in self.budgets
            ],
            "topology": {
                "budget": self.topology_budget,
                "relations": {
                    key(rel): {
                        "gpu_rows": self.topology_rows[rel],
                        "gpu_bytes": self.topology_bytes[rel],
                        "gpu_entry_reads": self.topology_gpu_entries[rel],
                        "entry_reads": self.topology_entries[rel],
                    }
                    for rel in self.topology_rows
                },
            },
            "edge_features": self.edges.to_json() if self.edges is not None else None,
        }


def _budget_bytes(text: str, option: str, total_bytes: int, auto_bytes: int) -> int:
    budget = parse_budget(text, option)
    if budget.auto:
        return max(0, auto_bytes)
    if budget.fraction is not None:
        return int(np.floor(budget.fraction * total_bytes + 1e-9))
    assert budget.num_bytes is not None
    return budget.num_bytes


def plan_typed(
    dataset: Dataset,
    *,
    budgets: Sequence[str],
    topology_budget: str,
    gpu_usable_bytes: int,
    replay: Replay = DEFAULT_REPLAY,
    reads: SampledReads | None = None,
    progress: Progress = NO_PROGRESS,
) -> TypedPlan:
    """Plan ``dataset`` (typed) for each of ``budgets`` (``--budgets`` syntax) and ``topology_budget``.

    Reads per epoch come from ``reads`` (a :func:`~graphtier.tiering.replay.replay_reads` of ``replay.epochs``
    epochs), replayed here from ``replay`` (:class:`~graphtier.tiering.replay.Replay`: fanouts overridden per
    relation by its ``relation_fanouts``, batch size, seed, and the seeds: the training nodes, or with
    ``task="link"`` the typed link sampler over the training pairs) when None. ``gpu_usable_bytes`` resolves
    ``auto``. ``progress`` reports the replay.
    """
    schema = dataset.schema
    epochs = replay.epochs
    if reads is None:
        reads = replay_reads(dataset, replay, progress=progress)
    tables: dict[str, TypeTable] = {}
    cumulative: dict[str, np.ndarray] = {}
    for t in schema.node_types:
        row_bytes = t.feature_dim * np.dtype(t.feature_dtype).itemsize if t.feature_dim else 0
        per_row = reads.features[t.offset : t.stop].astype(np.float64) / epochs
        tables[t.name] = TypeTable(row_bytes, t.count, per_row)
        cumulative[t.name] = np.concatenate([[0.0], np.cumsum(per_row)])
    total = sum(t.row_bytes * t.rows for t in tables.values())
    rows_out = []
    for text in budgets:
        rows = split_feature_budget(tables, _budget_bytes(text, "budgets", total, gpu_usable_bytes))
        rows_out.append(
            TypedBudgetRow(
                text,
                rows,
                {name: rows[name] * tables[name].row_bytes for name in rows},
                {name: float(cumulative[name][rows[name]]) for name in rows},
            )
        )
    plan = TypedPlan(
        {n: t.rows for n, t in tables.items()},
        {n: t.row_bytes for n, t in tables.items()},
        {n: float(c[-1]) for n, c in cumulative.items()},
        rows_out,
        topology_budget,
    )
    indptr = np.asarray(dataset.indptr)
    itemsize = int(dataset.indices.dtype.itemsize)
    list_entries = reads.list_entries.astype(np.float64) / epochs
    relations = relation_tables(indptr, schema, itemsize, list_entries)
    entry_sums = {rel: np.concatenate([[0.0], np.cumsum(t.reads_per_row)]) for rel, t in relations.items()}
    topo_total = int(indptr[-1]) * itemsize
    topo_rows = split_relation_rows(
        indptr, schema, itemsize, list_entries,
        _budget_bytes(topology_budget, "topology_budget", topo_total, gpu_usable_bytes),
    )  # fmt: skip
    for rel, count in topo_rows.items():
        ptr = relations[rel].indptr
        plan.topology_rows[rel] = count
        plan.topology_bytes[rel] = int(ptr[count] - ptr[0]) * itemsize
        plan.topology_gpu_entries[rel] = float(entry_sums[rel][count])
        plan.topology_entries[rel] = float(entry_sums[rel][-1])
    plan.edges = plan_edge_features(dataset, reads.list_entries, list(budgets), epochs)
    return plan


def format_typed_plan(plan: TypedPlan) -> str:
    """The plan as text: one line per budget with each type's GPU rows and share of its reads, then the
    topology split per relation."""
    names = list(plan.table_rows)
    total_reads = sum(reads for n, reads in plan.reads.items() if plan.row_bytes[n])
    lines = [
        "types: "
        + ", ".join(
            f"{n} {plan.table_rows[n]:,} x {format_bytes(plan.row_bytes[n])}"
            + (" (featureless)" if not plan.row_bytes[n] else "")
            + f", {plan.reads[n]:,.0f} reads/epoch"
            for n in names
        )
    ]
    for row in plan.budgets:
        share = row.total_gpu_reads / total_reads if total_reads else 0.0
        parts = []
        for n in names:
            if not plan.row_bytes[n]:
                continue
            type_share = row.gpu_reads[n] / plan.reads[n] if plan.reads[n] else 0.0
            parts.append(f"{n} {row.gpu_rows[n]:,} rows ({100 * type_share:.1f}% of its reads)")
        lines.append(
            f"budget {row.budget:>6}: GPU {format_bytes(row.total_bytes)}, {100 * share:.1f}% of the feature reads; "
            + ", ".join(parts)
        )
    lines.append(f"topology budget {plan.topology_budget}:")
    for rel, count in plan.topology_rows.items():
        read = plan.topology_entries[rel]
        share = plan.topology_gpu_entries[rel] / read if read else 0.0
        lines.append(
            f"  ({', '.join(rel)}): {count:,} lists on the GPU ({format_bytes(plan.topology_bytes[rel])}), "
            f"{100 * share:.1f}% of its {read:,.0f} entry reads/epoch"
        )
    return "\n".join(lines + format_edge_plan(plan.edges))
