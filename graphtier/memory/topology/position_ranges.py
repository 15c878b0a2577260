"""GPU ranges of a tiered ``indices`` array: the positions held on the GPU as several ranges, not one prefix.

A homogeneous graph reordered hottest first keeps its hot neighbour lists in a prefix of ``indices``, so
:class:`graphtier.memory.topology.topology.TieredTopology` puts positions ``[0, local_rows)`` on the GPU. A typed graph
stores every relation's CSC back to back (:mod:`graphtier.dataset.schema`), each relation reordered hottest
first on its own, so its GPU tier is a prefix of each relation's rows: several sorted, disjoint position
ranges (:func:`graphtier.memory.plan.typed_budget.relation_gpu_ranges`).

:class:`GpuRanges` lays the positions out in *tier order*: the GPU ranges first (back to back, tier order
``[0, gpu_entries)``), then every other position in ascending order (the host tier, then the disk tier, as a
:class:`~graphtier.memory.plan.placement.TierPlan` over the tier order says). A position maps to its tier order by
one ``searchsorted`` over the segment starts plus a per-segment offset (:meth:`GpuRanges.to_tier_order`);
with one range starting at 0 (or none) the tier order is the position itself (:attr:`GpuRanges.is_prefix`)
and the topology keeps its single-prefix path unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch

from graphtier.errors import OptionError


class GpuRanges:
    """Sorted, disjoint position ranges ``[start, stop)`` of an array of ``num_positions`` entries held on the GPU.

    Attributes: ``ranges`` (the non-empty ranges, ascending), ``gpu_entries`` (their total length),
    ``is_prefix`` (no range, or one range starting at 0: tier order == position), ``starts`` / ``offsets``
    (int64 [S]: the segments of the position axis, GPU ranges and the gaps between them; a position ``p`` in
    segment ``s`` has tier order ``p + offsets[s]``).
    """

    def __init__(self, ranges: Sequence[tuple[int, int]], num_positions: int) -> None:
        kept = [(int(a), int(b)) for a, b in ranges if int(b) > int(a)]
        previous = 0
        for start, stop in kept:
            if start < previous or stop > num_positions:
                raise OptionError(
                    f"gpu ranges: expected sorted disjoint ranges within [0, {num_positions}), found {list(ranges)}"
                )
            previous = stop
        self.ranges = kept
        self.num_positions = int(num_positions)
        self.gpu_entries = sum(stop - start for start, stop in kept)
        self.is_prefix = not kept or (len(kept) == 1 and kept[0][0] == 0)
        starts, offsets = [], []
        before = 0  # GPU entries below the current position
        cursor = 0
        for start, stop in kept:
            if start > cursor:  # a gap: after the GPU tier, shifted down by the GPU entries below it
                starts.append(cursor)
                offsets.append(self.gpu_entries - before)
            starts.append(start)
            offsets.append(before - start)
            before += stop - start
            cursor = stop
        if cursor < num_positions or not starts:
            starts.append(cursor)
            offsets.append(self.gpu_entries - before)
        self.starts = np.asarray(starts, dtype=np.int64)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self._on_device: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = {}

    @classmethod
    def prefix(cls, gpu_entries: int, num_positions: int) -> GpuRanges:
        """The single range ``[0, gpu_entries)`` (the homogeneous plan)."""
        return cls([(0, gpu_entries)], num_positions)

    def to_tier_order(self, positions: torch.Tensor) -> torch.Tensor:
        """Tier order of each position: int64 [M] (any device) -> int64 [M] on the same device (the input itself
        when :attr:`is_prefix`). Positions outside ``[0, num_positions)`` map to unspecified values."""
        if self.is_prefix:
            return positions
        if positions.device.type == "cpu":
            values = positions.numpy()
            segment = np.searchsorted(self.starts, values, side="right") - 1
            return torch.from_numpy(values + self.offsets[np.maximum(segment, 0)])
        tables = self._on_device.get(positions.device)
        if tables is None:
            tables = (torch.from_numpy(self.starts).to(positions.device),
                      torch.from_numpy(self.offsets).to(positions.device))  # fmt: skip
            self._on_device[positions.device] = tables
        starts, offsets = tables
        segment = (torch.searchsorted(starts, positions, right=True) - 1).clamp_(min=0)
        return positions + offsets[segment]

    def segments(self, begin: int, end: int) -> Iterator[tuple[int, int]]:
        """Position ranges ``[start, stop)`` that hold tier order ``[begin, end)``, in tier order."""
        ordered = list(self.ranges)
        cursor = 0
        for start, stop in self.ranges:
            if start > cursor:
                ordered.append((cursor, start))
            cursor = stop
        if cursor < self.num_positions:
            ordered.append((cursor, self.num_positions))
        at = 0
        for start, stop in ordered:
            low, high = max(begin, at), min(end, at + stop - start)
            if low < high:
                yield start + low - at, start + high - at
            at += stop - start

    def copy_tier_order(self, array: np.ndarray, begin: int, end: int, out: np.ndarray | None = None) -> np.ndarray:
        """``array`` (1-d [num_positions], RAM or memory map) at tier order ``[begin, end)``, copied into ``out``
        (default a new array of ``array``'s dtype) segment by segment."""
        if out is None:
            out = np.empty(end - begin, dtype=array.dtype)
        at = 0
        for start, stop in self.segments(begin, end):
            out[at : at + stop - start] = array[start:stop]
            at += stop - start
        return out

    def describe(self) -> str:
        """``"N ranges"`` or ``"a prefix"``."""
        return "a prefix" if self.is_prefix else f"{len(self.ranges)} ranges"
