"""Where the rows of a learnable table live, and their first values (:class:`~graphtier.train.nn.tiered_embedding.
TieredEmbedding`).

A table is allocated when it is placed, never twice: its hot prefix on the compute device, the rest in host memory
or, with ``--tables-on disk``, in unlinked scratch files (:func:`graphtier.dataset.scratch.scratch_array`: the page
cache holds what is read, the process's anonymous memory holds none of it, nothing is left behind). A MAG-scale
author table (100M rows x 64 floats, and two Adam moments per float) is 77 GB: more than the RAM of most boxes.

The first values do not depend on the placement: each table draws one seed from torch's global generator when it
is built, and :func:`fill_rows` fills any row range from that seed in fixed chunks of :data:`INIT_CHUNK_ROWS` rows
of the whole table, so a row has the same value in RAM, on disk or on a GPU.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import torch
from torch import Tensor

from graphtier.dataset.advice import advise_access
from graphtier.dataset.scratch import scratch_array

INIT_KINDS = ("normal", "xavier_uniform")
"""``normal``: N(0, 1) as ``nn.Embedding``; ``xavier_uniform``: U(-a, a) with ``a = sqrt(6 / (count + dim))`` as
``nn.init.xavier_uniform_`` on the [count, dim] table (a one-hot projection)."""
INIT_CHUNK_ROWS = 1 << 16
"""Rows drawn per generator call (the chunks are the whole table's, wherever its rows are)."""
FIELDS = ("weight", "exp_avg", "exp_avg_sq", "steps")
"""The per-row state of a table: the row, Adam's two moments and its step count (int32)."""


def draw_seed() -> int:
    """A table's seed: one draw of torch's global CPU generator (whatever the default device is)."""
    return int(torch.empty((), dtype=torch.int64, device="cpu").random_(0, 2**62))


def fill_rows(out: Tensor, start: int, count: int, dim: int, init: str, seed: int) -> None:
    """Fill ``out`` (float [n, dim], CPU or device) with rows ``start .. start + n`` of the [count, dim] table whose
    first values ``init`` (:data:`INIT_KINDS`) draws from ``seed``."""
    n = int(out.shape[0])
    first, last = start // INIT_CHUNK_ROWS, (start + n - 1) // INIT_CHUNK_ROWS
    bound = math.sqrt(6.0 / (count + dim))
    for chunk in range(first, last + 1) if n else ():
        lo = chunk * INIT_CHUNK_ROWS
        rows = min(INIT_CHUNK_ROWS, count - lo)
        generator = torch.Generator().manual_seed(seed + chunk)
        values = torch.empty((rows, dim), dtype=torch.float32)
        if init == "normal":
            values.normal_(0.0, 1.0, generator=generator)
        else:
            values.uniform_(-bound, bound, generator=generator)
        a, b = max(lo, start), min(lo + rows, start + n)
        out[a - start : b - start].copy_(values[a - lo : b - lo])


def tier_tensors(
    rows: int,
    dim: int,
    device: torch.device,
    directory: str | os.PathLike[str] | None,
    keys: tuple[str, ...] = FIELDS,
) -> dict[str, Tensor]:
    """Zeroed ``keys`` (of :data:`FIELDS`) of ``rows`` rows: on ``device``, or memory maps of unlinked files in
    ``directory``. A table makes its optimizer state when a step needs it: inference holds the rows only."""
    if directory is None:
        return {key: torch.zeros((rows, dim) if key != "steps" else (rows,),
                                 dtype=torch.float32 if key != "steps" else torch.int32, device=device)
                for key in keys}  # fmt: skip
    return {
        key: torch.from_numpy(disk_array(directory, (rows, dim) if key != "steps" else (rows,),
                                         np.float32 if key != "steps" else np.int32,
                                         f"learnable table {key} [{rows}, {dim}] (--tables-on disk)"))
        for key in keys
    }  # fmt: skip


def disk_array(directory: str | os.PathLike[str], shape: tuple[int, ...], dtype: Any, what: str) -> np.ndarray:
    """A zeroed scratch array (:func:`graphtier.dataset.scratch.scratch_array`) for a table's rows on disk, advised
    ``random`` before its first use (:func:`graphtier.dataset.advice.advise_access`): a page fault then brings in
    its page alone, not read-ahead around it. Measured on this VM's kernel (6.18), pages brought in by read-ahead
    (filling a table in order) are cached as large folios, and an Adam step that changes one row of one then
    dirties, and writes back, the whole folio: 58 KB per touched row of a 4M x 64 table and its two moments in three
    files, 12.6 KB with the advice, 5.3 KB with the moments beside the row too (:func:`interleaved_state`;
    benchmarks/bench_table_writes.py, docs/benchmarks.md session 9)."""
    array = scratch_array(directory, shape, dtype, what)
    advise_access(array, "random")
    return array


COPY_CHUNK_ROWS = 1 << 20
"""Rows copied at a time between tiers (a GPU tier's rows pass through host memory this many at a time)."""


def copy_rows(out: Tensor, parts: tuple[Tensor, ...]) -> Tensor:
    """Fill ``out`` [sum of rows, ...] (CPU, a memory map or not) with ``parts`` one after another (any device), in
    chunks of :data:`COPY_CHUNK_ROWS` rows: a table larger than RAM passes through without a copy in RAM."""
    at = 0
    for part in parts:
        for lo in range(0, int(part.shape[0]), COPY_CHUNK_ROWS):
            rows = part[lo : lo + COPY_CHUNK_ROWS]
            out[at : at + rows.shape[0]].copy_(rows)
            at += int(rows.shape[0])
    return out


def interleaved_state(weight: Tensor, directory: str | os.PathLike[str]) -> dict[str, Tensor]:
    """A table's rows on disk moved beside zero Adam moments: :data:`FIELDS` of ``weight`` (float [rows, dim], CPU, a
    memory map), where ``weight``, ``exp_avg`` and ``exp_avg_sq`` are column blocks of ONE unlinked scratch file
    [rows, 3 * dim] in ``directory`` (a row and its moments side by side: an Adam step on a row dirties its one page,
    not one page in each of three files) and ``steps`` an int32 [rows] file of its own. The rows are copied in
    order (:data:`COPY_CHUNK_ROWS` at a time)."""
    rows, dim = int(weight.shape[0]), int(weight.shape[1])
    dtype = np.dtype(str(weight.dtype).removeprefix("torch."))
    what = f"learnable table and Adam moments [{rows}, 3 x {dim}] (--tables-on disk)"
    block = torch.from_numpy(disk_array(directory, (rows, 3 * dim), dtype, what))
    copy_rows(block[:, :dim], (weight,))
    steps = torch.from_numpy(disk_array(directory, (rows,), np.int32, f"learnable table steps [{rows}]"))
    return {"weight": block[:, :dim], "exp_avg": block[:, dim : 2 * dim], "exp_avg_sq": block[:, 2 * dim :],
            "steps": steps}  # fmt: skip


def scratch_tensor(directory: str | os.PathLike[str], like: Tensor, rows: int, what: str) -> Tensor:
    """A zeroed CPU tensor of ``rows`` rows shaped and typed as ``like``'s rows, memory-mapped on an unlinked file in
    ``directory`` (:func:`graphtier.dataset.scratch.scratch_array`)."""
    dtype = np.dtype(str(like.dtype).removeprefix("torch."))
    return torch.from_numpy(scratch_array(directory, (rows, *like.shape[1:]), dtype, what))
