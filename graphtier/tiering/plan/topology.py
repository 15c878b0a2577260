"""Topology (CSC graph) tiers in the capacity plan: tier sizes and the list entries each tier serves.

The plan models sampling on the GPU from a tiered topology (as ``TieredTopology`` does): ``indptr``
(int64 [N + 1]) lives whole on every GPU, the first entries of ``indices`` (the in-neighbour lists of
the lowest ids, the hottest after ``graphtier reorder``) are held on the GPU up to ``--topology-budget``,
the next ones in host RAM read zero-copy over PCIe, and the rest, beyond the RAM left by the feature
host tier, in the memory map on disk. The tiers are ranges of positions in ``indices``.

Reads come from the sampler replay (:func:`graphtier.tiering.reads.count_sampled_reads`): every sampled
edge reads one ``indices`` entry inside its destination's list ``[indptr[v], indptr[v + 1])`` and every
destination of every hop two ``indptr`` entries (16 bytes, on the GPU). The replay counts entries per
destination node, not positions, so a list that straddles a tier boundary has its reads split between
the two tiers in proportion to the part of the list on each side (the sampler draws positions uniformly
from the list); lists that end at or before a boundary are wholly below it, so the split is exact
whenever the boundary falls between two lists.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphtier.memory.plan.placement import parse_budget
from graphtier.memory.topology.topology import INDPTR_BYTES_PER_DESTINATION, INDPTR_ENTRY_BYTES
from graphtier.tiering.reads import SampledReads

TOPOLOGY_TIERS: tuple[str, ...] = ("gpu", "host", "disk")


def entries_before(indptr: np.ndarray, cumulative: np.ndarray, entries: np.ndarray, boundary: int) -> float:
    """Reads of ``indices`` positions below ``boundary``: whole lists ending at or before it, plus the
    straddling list's reads times the share of that list below the boundary.

    ``indptr`` int64 [N + 1]; ``entries`` int64 [N] reads per destination list; ``cumulative`` int64
    [N + 1] its prefix sums (``cumulative[0] == 0``).
    """
    ends = indptr[1:]
    whole = int(np.searchsorted(ends, boundary, side="right"))  # lists 0..whole-1 end at or before it
    total = float(cumulative[whole])
    if whole < entries.shape[0]:
        start, end = int(indptr[whole]), int(indptr[whole + 1])
        if start < boundary < end:
            total += float(entries[whole]) * (boundary - start) / (end - start)
    return total


@dataclass(frozen=True)
class TopologyPlan:
    """The topology part of a capacity plan (the GPU tier is the same for every feature budget).

    Attributes:
        budget: the ``--topology-budget`` text; ``capped``: True when it asked for more than fits.
        num_nodes, num_entries, itemsize: ``indptr`` has N + 1 int64 entries, ``indices`` E of ``itemsize``.
        gpu_entries: entries of ``indices`` held on each GPU (a prefix).
        entries_per_epoch: ``indices`` entries read per epoch, per tier without RAM limit, see ``row``;
        destinations_per_epoch: hop destinations per epoch (two ``indptr`` reads each).
    """

    budget: str
    capped: bool
    num_nodes: int
    num_entries: int
    itemsize: int
    gpu_entries: int
    gpu_entry_reads: float
    total_entry_reads: float
    destinations_per_epoch: float
    indptr: np.ndarray
    cumulative: np.ndarray
    entries: np.ndarray
    epochs: int

    @property
    def indptr_bytes(self) -> int:
        return INDPTR_ENTRY_BYTES * (self.num_nodes + 1)

    @property
    def gpu_bytes(self) -> int:
        """Bytes of topology on each GPU: the whole ``indptr`` plus the ``indices`` prefix."""
        return self.indptr_bytes + self.gpu_entries * self.itemsize

    def row(self, ram_bytes: int) -> tuple[dict[str, int], dict[str, float]]:
        """(tier bytes, bytes read per epoch per tier) when ``ram_bytes`` of host RAM are left for the topology."""
        host_entries = min(self.num_entries - self.gpu_entries, max(0, ram_bytes) // self.itemsize)
        host_end = self.gpu_entries + host_entries
        below_host = entries_before(self.indptr, self.cumulative, self.entries, host_end)
        reads = {
            "gpu": self.gpu_entry_reads,
            "host": below_host - self.gpu_entry_reads,
            "disk": self.total_entry_reads - below_host,
        }
        read_bytes = {tier: reads[tier] * self.itemsize / self.epochs for tier in TOPOLOGY_TIERS}
        read_bytes["gpu"] += INDPTR_BYTES_PER_DESTINATION * self.destinations_per_epoch
        tier_bytes = {
            "gpu": self.gpu_bytes,
            "host": host_entries * self.itemsize,
            "disk": (self.num_entries - host_end) * self.itemsize,
        }
        return tier_bytes, read_bytes

    def to_json(self) -> dict[str, object]:
        return {
            "budget": self.budget,
            "capped": self.capped,
            "num_nodes": self.num_nodes,
            "num_entries": self.num_entries,
            "itemsize": self.itemsize,
            "indptr_bytes": self.indptr_bytes,
            "gpu_entries": self.gpu_entries,
            "gpu_bytes": self.gpu_bytes,
            "entry_reads_per_epoch": self.total_entry_reads / self.epochs,
            "destinations_per_epoch": self.destinations_per_epoch,
        }


def plan_topology(
    indptr: np.ndarray, itemsize: int, reads: SampledReads, budget: str, gpu_usable_bytes: int, epochs: int
) -> TopologyPlan:
    """Size the GPU prefix of ``indices`` for ``budget`` (``--topology-budget`` syntax: bytes, a fraction of
    the edges, or ``auto`` = all the usable GPU memory left after ``indptr``), capped at what fits in
    ``gpu_usable_bytes`` next to ``indptr``; reads from the replay ``reads`` of ``epochs`` epochs.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    num_nodes, num_entries = indptr.shape[0] - 1, int(indptr[-1])
    wanted = parse_budget(budget, "topology_budget")
    fit = max(0, gpu_usable_bytes - INDPTR_ENTRY_BYTES * (num_nodes + 1)) // itemsize
    asked = wanted.rows(num_entries, itemsize, auto_bytes=fit * itemsize)
    gpu_entries = min(asked, fit, num_entries)
    entries = np.asarray(reads.list_entries, dtype=np.int64)
    cumulative = np.concatenate([[0], np.cumsum(entries, dtype=np.int64)])
    return TopologyPlan(
        budget=budget,
        capped=asked > fit,
        num_nodes=num_nodes,
        num_entries=num_entries,
        itemsize=itemsize,
        gpu_entries=gpu_entries,
        gpu_entry_reads=entries_before(indptr, cumulative, entries, gpu_entries),
        total_entry_reads=float(cumulative[-1]),
        destinations_per_epoch=reads.destinations / epochs,
        indptr=indptr,
        cumulative=cumulative,
        entries=entries,
        epochs=epochs,
    )
