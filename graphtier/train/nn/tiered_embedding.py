"""A learnable [count, dim] table tiered like the feature tables, trained by a sparse row-wise Adam.

A featureless node type (``--featureless embedding`` or ``onehot``) learns one row per node. At MAG scale (100M+
authors x 128 floats, plus two Adam moments per float) that does not fit on a GPU, so :class:`TieredEmbedding`
splits its rows: a prefix of ``hot_rows`` rows (the hottest ones after ``graphtier reorder``, as for features) on
the compute device, the rest in host memory (pinned when the hot tier is on CUDA; on the CPU both tiers are CPU
tensors and the arithmetic is the same). ``model.to(device)`` moves the hot tier only.

* Forward: the rows of the batch's ids gathered from both tiers into one float [n, dim] tensor on the ids' device,
  a leaf that requires grad while training (its ``grad`` after ``backward()`` is the gradient of those rows).
* The table is not a parameter: the model's dense optimizer never sees it. :func:`attach_sparse_adam` hooks a
  row-wise Adam (:meth:`TieredEmbedding.adam_step`, ``torch.optim.SparseAdam``'s formula: one step count per table,
  as an ``nn.Embedding(sparse=True)`` trained by it in PyG's and DGL's examples) to the dense optimizer's
  ``step()``: after the dense step, the touched rows of every table (and only those) are updated in their tier,
  with the dense optimizer's ``lr``, ``betas``, ``eps`` and ``weight_decay`` (L2 on the touched rows). A step count
  per row (DGL's ``dgl.optim.SparseAdam``) made a row's first updates ``sqrt(1 - beta2) / (1 - beta1)`` = 0.32x as
  large once the table had taken many steps: the typed link benchmark ended its third epoch at loss 0.384-0.387,
  against 0.370-0.373 with the table's count and DGL's 0.371 (docs/benchmarks.md, session 10).
  The moments and each row's last step live beside the rows in the same tiers and travel with the dense optimizer's
  ``state_dict()`` (entry ``sparse_rows``), so a checkpoint restores them (the table's count is their maximum).
* ``state_dict()`` holds the logical table ``weight`` [count, dim] (the key of the ``nn.Embedding`` it replaces):
  a saved model or checkpoint does not depend on the split; ``load_state_dict`` splits it again.

Bytes per row for the GPU budget (:data:`ADAM_STATE_FLOATS`, :func:`learnable_row_bytes`): the row and its two
moments in float32, plus the int32 step count: what the hot tier holds on the device per row.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from graphtier.train.nn._adam_kernels import adam_rows, sum_by_id
from graphtier.train.nn.table_storage import (
    FIELDS,
    INIT_KINDS,
    copy_rows,
    draw_seed,
    fill_rows,
    interleaved_state,
    scratch_tensor,
    tier_tensors,
)

ADAM_STATE_FLOATS = 2
"""Floats of optimizer state per table float (Adam's two moments)."""
STATE_KEY = "sparse_rows"
"""The entry of the dense optimizer's ``state_dict()`` holding every table's moments and step counts."""


def learnable_row_bytes(dim: int) -> int:
    """Device bytes of one row of a [count, ``dim``] table with its Adam state (float32 row and two moments, an
    int32 step count)."""
    return dim * 4 * (1 + ADAM_STATE_FLOATS) + 4


GradientGather = Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]
"""``(ids int64 [k], grads [k, dim]) -> (every rank's ids, every rank's grads)`` on the CPU, in rank order:
set on each table of a multi-process run (:func:`graphtier.train.dist.comm.all_gather_rows`), so that every rank
applies the same row updates."""


class TieredEmbedding(nn.Module):
    """A learnable [count, dim] float32 table: a hot prefix on the compute device, the rest in host memory or on disk.

    Args:
        count, dim: the table's shape.
        init: the first values, ``normal`` or ``xavier_uniform`` (:data:`~graphtier.train.nn.table_storage.
            INIT_KINDS`), drawn from a seed taken from torch's global generator here, the same wherever a row lives.
        hot_rows: rows of the hot prefix (default all; :meth:`place` chooses it before the table is first used).

    The rows are allocated when the table is placed (:meth:`place`) or first used, never before: a table too large
    for RAM is built straight into its disk tier (:mod:`graphtier.train.nn.table_storage`).
    """

    def __init__(self, count: int, dim: int, *, init: str = "normal", hot_rows: int | None = None) -> None:
        super().__init__()
        if init not in INIT_KINDS:
            raise ValueError(f"init: expected one of {', '.join(INIT_KINDS)}, found {init!r}")
        self.count, self.dim, self.init = int(count), int(dim), init
        self.seed = draw_seed()
        self._build_device = torch.empty(0).device  # the meta device when built under `with torch.device("meta")`
        self._planned_hot = self.count if hot_rows is None else max(0, min(self.count, int(hot_rows)))
        self._tiers: tuple[dict[str, Tensor], dict[str, Tensor]] | None = None
        self.cold_on_disk = False
        self._cold_dir: str | os.PathLike[str] | None = None
        self.rows_read = {"device": 0, "host": 0}  # rows gathered from each tier, cumulative
        self._pending: list[tuple[Tensor, Tensor]] = []
        self._slot: np.ndarray | None = None
        self.gather_gradient: GradientGather | None = None
        self._steps_taken: int | None = None  # the table's Adam steps (None: read from the rows' last steps)

    def _allocate(
        self, hot_rows: int, device: torch.device, cold_dir: str | os.PathLike[str] | None, fill: bool = True
    ) -> None:
        """Allocate both tiers (the hot one on ``device``, the cold one in host memory or in ``cold_dir``) and fill
        their first values (``fill``; else zeros, for rows about to be loaded)."""
        meta = self._build_device.type == "meta"
        hot = tier_tensors(hot_rows, self.dim, torch.device("meta") if meta else device, None, ("weight",))
        cold = tier_tensors(self.count - hot_rows, self.dim, torch.device("meta" if meta else "cpu"), cold_dir,
                            ("weight",))  # fmt: skip
        self._cold_dir = cold_dir
        if not meta and fill:
            fill_rows(hot["weight"], 0, self.count, self.dim, self.init, self.seed)
            fill_rows(cold["weight"], hot_rows, self.count, self.dim, self.init, self.seed)
        self._set_tiers(hot, cold, cold_dir is not None)

    @property
    def hot(self) -> dict[str, Tensor]:
        """:data:`~graphtier.train.nn.table_storage.FIELDS` of the hot prefix, on the compute device."""
        if self._tiers is None:
            self._allocate(self._planned_hot, torch.device("cpu"), None)
        assert self._tiers is not None
        return self._tiers[0]

    @property
    def cold(self) -> dict[str, Tensor]:
        """:data:`~graphtier.train.nn.table_storage.FIELDS` of the other rows: host memory, or memory maps."""
        self.hot  # noqa: B018 - allocates both tiers on first use
        assert self._tiers is not None
        return self._tiers[1]

    @property
    def hot_rows(self) -> int:
        """Rows of the hot prefix (on the compute device)."""
        return self._planned_hot if self._tiers is None else int(self._tiers[0]["weight"].shape[0])

    @property
    def device(self) -> torch.device:
        """The compute device (where the hot tier lives)."""
        return self._build_device if self._tiers is None else self._tiers[0]["weight"].device

    def tier_bytes(self) -> dict[str, int]:
        """Bytes of the rows and their Adam state in each tier: ``{"device": ..., "host": ...}``."""
        size = learnable_row_bytes(self.dim)
        return {"device": self.hot_rows * size, "host": (self.count - self.hot_rows) * size}

    @staticmethod
    def _host(tensor: Tensor, device: torch.device) -> Tensor:
        """``tensor`` in host memory, pinned when the hot tier's ``device`` is a GPU."""
        tensor = tensor.cpu()
        return tensor.pin_memory() if device.type == "cuda" and not tensor.is_pinned() else tensor

    def _set_tiers(self, hot: dict[str, Tensor], cold: dict[str, Tensor], on_disk: bool) -> None:
        device = hot["weight"].device
        self.cold_on_disk = on_disk and self.count > int(hot["weight"].shape[0])
        keep = self.cold_on_disk or device.type == "meta"  # a meta table (a skeleton) has no host memory either
        self._tiers = (hot, cold if keep else {key: self._host(v, device) for key, v in cold.items()})

    def place(self, hot_rows: int, cold_dir: str | os.PathLike[str] | None = None, *, fill: bool = True) -> None:
        """Split the rows (and their optimizer state): the first ``hot_rows`` on the compute device, the rest in host
        memory, or in unlinked scratch files in ``cold_dir`` (``--tables-on disk``). Before the first use the table
        is allocated so (nothing else is; with their first values, or zeros without ``fill``: rows about to be
        loaded); later the rows move with their values."""
        hot_rows = max(0, min(self.count, int(hot_rows)))
        if self._tiers is None:
            self._allocate(hot_rows, self._build_device, cold_dir, fill)
            return
        if hot_rows == self.hot_rows and (cold_dir is not None) == self.cold_on_disk:
            return
        device, keys = self.device, tuple(self.hot)
        full = {key: self.full(key) for key in keys}
        hot = {key: value[:hot_rows].to(device) for key, value in full.items()}
        cold = tier_tensors(self.count - hot_rows, self.dim, torch.device("cpu"), cold_dir, keys)
        self._cold_dir = cold_dir
        for key, value in cold.items():
            value.copy_(full[key][hot_rows:])
        self._set_tiers(hot, cold, cold_dir is not None)

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> TieredEmbedding:  # type: ignore[override]
        """``.to(device)`` / ``.cuda()`` / ``.cpu()`` move the hot tier only; the cold tier stays in host memory
        (pinned when the hot tier is on CUDA). ``.double()`` and the like convert the rows and moments of both."""
        probe = fn(torch.empty(0))
        device, dtype = probe.device, probe.dtype

        def convert(key: str, value: Tensor) -> Tensor:
            return value.to(dtype) if key != "steps" and dtype.is_floating_point else value

        if self._tiers is None and dtype == torch.float32:  # not allocated yet: it will be on ``device``
            self._build_device = device if self._build_device.type != "meta" else self._build_device
            return self
        hot = {key: convert(key, value).to(device) for key, value in self.hot.items()}
        self._set_tiers(hot, {key: convert(key, value) for key, value in self.cold.items()}, self.cold_on_disk)
        return self

    def _split(self, ids: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Positions and tier rows of ``ids``: (hot positions, hot rows, cold positions, cold rows)."""
        hot = ids < self.hot_rows
        hot_at = torch.nonzero(hot).flatten()
        cold_at = torch.nonzero(~hot).flatten()
        return hot_at, ids[hot_at], cold_at, ids[cold_at] - self.hot_rows

    def lookup(self, ids: Tensor) -> Tensor:
        """Rows of ``ids`` (int64 [n], any device) from both tiers: float32 [n, dim] on ``ids``' device (no grad)."""
        ids = ids.long()
        out_device = ids.device
        if self.hot_rows == self.count:
            rows = self.hot["weight"].index_select(0, ids.to(self.device))
            self.rows_read["device"] += int(ids.shape[0])
            return rows.to(out_device)
        if self.hot_rows == 0 and out_device.type == "cpu":  # every row in host memory, read where it is
            self.rows_read["host"] += int(ids.shape[0])
            return self.cold["weight"].index_select(0, ids)
        hot_at, hot_ids, cold_at, cold_ids = self._split(ids)
        out = torch.empty((ids.shape[0], self.dim), dtype=self.hot["weight"].dtype, device=out_device)
        out[hot_at] = self.hot["weight"][hot_ids.to(self.device)].to(out_device)
        cold = self.cold["weight"][cold_ids.cpu()]
        out[cold_at] = (cold.pin_memory() if out_device.type == "cuda" else cold).to(out_device, non_blocking=True)
        self.rows_read["device"] += int(hot_at.shape[0])
        self.rows_read["host"] += int(cold_at.shape[0])
        return out

    def forward(self, ids: Tensor) -> Tensor:
        """Rows of ``ids`` (int64 [n]): float32 [n, dim] on ``ids``' device; while training with grad enabled a leaf
        whose gradient the sparse step applies (see the module)."""
        rows = self.lookup(ids)
        if self.training and torch.is_grad_enabled():
            rows.requires_grad_(True)
            self._pending.append((ids.long(), rows))
        return rows

    def pending_gradient(self) -> tuple[Tensor, Tensor] | None:
        """The touched rows since the last step and their summed gradient: (unique ids int64 [k], float32 [k, dim])
        on the forward's device; None when nothing got a gradient. Clears the pending lookups."""
        pending, self._pending = self._pending, []
        pairs = [(ids, rows.grad) for ids, rows in pending if rows.grad is not None]
        if not pairs:
            return None
        ids = torch.cat([ids for ids, _ in pairs])
        grads = torch.cat([grad for _, grad in pairs])
        if ids.device.type != "cpu":
            return sum_by_id_reference(ids, grads)
        return self._sum_rows(ids, grads)  # the kernel's scratch: one int32 per row, -1 between steps

    def _sum_rows(self, ids: Tensor, grads: Tensor) -> tuple[Tensor, Tensor] | None:
        """(distinct ids, each id's rows summed) of CPU ``ids`` [n] / ``grads`` [n, dim]; None when empty."""
        if ids.shape[0] == 0:
            return None
        if self._slot is None:
            self._slot = np.full(self.count, -1, dtype=np.int32)
        unique, summed = sum_by_id(ids.numpy(), grads.contiguous().numpy(), self._slot)
        return torch.from_numpy(unique), torch.from_numpy(summed)

    def adam_step(self, lr: float, betas: tuple[float, float], eps: float, weight_decay: float) -> None:
        """Row-wise Adam on the rows touched since the last step, each in its tier (see the module)."""
        touched = self.pending_gradient()
        if self.gather_gradient is not None:  # several processes: every rank's rows, summed, on every rank
            ids, grad = (
                touched if touched is not None else (torch.zeros(0, dtype=torch.int64), torch.zeros(0, self.dim))
            )
            touched = self._sum_rows(*self.gather_gradient(ids.cpu(), grad.cpu().to(self.hot["weight"].dtype)))
        if touched is None:
            return
        ids, grad = touched
        self._ensure_state()
        if self._steps_taken is None:  # loaded state: the table's count is the last step of any row
            self._steps_taken = max(int(self.hot["steps"].max()) if self.hot_rows else 0,
                                    int(self.cold["steps"].max()) if self.count > self.hot_rows else 0)  # fmt: skip
        self._steps_taken += 1
        hot_at, hot_ids, cold_at, cold_ids = self._split(ids)
        for tier, rows, at in ((self.hot, hot_ids, hot_at), (self.cold, cold_ids, cold_at)):
            if rows.numel():
                where = tier["weight"].device
                _adam_rows(tier, rows.to(where), grad[at].to(where), self._steps_taken, lr, betas, eps, weight_decay)

    # state: the logical table in the model's state dict, the moments in the optimizer's
    def _save_to_state_dict(self, destination: dict[str, Any], prefix: str, keep_vars: bool) -> None:
        destination[prefix + "weight"] = self.full("weight")

    def _ensure_state(self) -> None:
        """Make the optimizer state (zero moments and step counts) of both tiers on the first step or state load."""
        hot, cold = self.hot, self.cold
        if "exp_avg" in hot:
            return
        state = FIELDS[1:]
        self._steps_taken = 0
        hot.update(tier_tensors(self.hot_rows, self.dim, self.device, None, state))
        if self.cold_on_disk:  # a row beside its moments in one file (interleaved_state)
            assert self._cold_dir is not None
            cold.update(interleaved_state(cold["weight"], self._cold_dir))
            return
        made = tier_tensors(self.count - self.hot_rows, self.dim, cold["weight"].device, None, state)
        keep = self.device.type == "meta"
        cold.update(made if keep else {key: self._host(value, self.device) for key, value in made.items()})

    def full(self, key: str) -> Tensor:
        """The whole ``key`` (``weight``, ``exp_avg``, ``exp_avg_sq``, ``steps``) of both tiers, on the CPU.

        A table on disk (``--tables-on disk``) stays there: with every row on disk and no optimizer state yet the disk
        tier itself (a memory map, as ``state_dict()`` entries alias a module's parameters), else (a hot prefix, or
        rows stored beside their moments once a step made them) a copy in a new unlinked scratch file; never a copy
        of the whole table in RAM (:meth:`snapshot` for a copy that later steps do not change)."""
        if key != "weight":
            self._ensure_state()
        cold = self.cold[key]  # host memory (or meta, for a model built on the meta device)
        if not self.cold_on_disk:
            return torch.cat([self.hot[key].to(cold.device), cold])
        if self.hot_rows == 0 and cold.is_contiguous():
            return cold
        return self._disk_copy(key)  # a hot prefix, or a column block of the rows beside their moments

    def snapshot(self, key: str = "weight") -> Tensor:
        """A copy of :meth:`full` that later steps leave as it is: in RAM, or (a table on disk) in an unlinked
        scratch file beside its disk tier."""
        return self._disk_copy(key) if self.cold_on_disk else self.full(key)

    def _disk_copy(self, key: str) -> Tensor:
        cold = self.cold[key]
        assert self._cold_dir is not None
        out = scratch_tensor(self._cold_dir, cold, self.count, f"a copy of learnable table {key} [{self.count}, "
                             f"{self.dim}] (--tables-on disk)")  # fmt: skip
        return copy_rows(out, (self.hot[key], cold))

    def load_full(self, key: str, value: Tensor) -> None:
        """Copy ``value`` (``key``'s [count, ...] tensor) into both tiers; ValueError on another shape."""
        expected = (self.count, self.dim) if key != "steps" else (self.count,)
        if tuple(value.shape) != expected:
            raise ValueError(f"{key}: expected shape {expected}, found {tuple(value.shape)}")
        if key != "weight":
            self._ensure_state()
        if key == "steps":
            self._steps_taken = None  # the count is read again from the rows
        hot = self.hot_rows
        copy_rows(self.hot[key], (value[:hot],))
        copy_rows(self.cold[key], (value[hot:],))

    def _load_from_state_dict(
        self, state_dict: Mapping[str, Any], prefix: str, local_metadata: Any, strict: bool,
        missing_keys: list[str], unexpected_keys: list[str], error_msgs: list[str],
    ) -> None:  # fmt: skip
        key = prefix + "weight"
        if key not in state_dict:
            missing_keys.append(key)
        else:
            try:
                self.load_full("weight", state_dict[key])
            except ValueError as exc:
                error_msgs.append(f"size mismatch for {key}: {exc}")
        unexpected_keys.extend(k for k in state_dict if k.startswith(prefix) and k != key)

    def extra_repr(self) -> str:
        """Shape and split."""
        return f"{self.count}, {self.dim}, hot_rows={self.hot_rows}"


def _adam_rows(tier: dict[str, Tensor], rows: Tensor, grad: Tensor, step: int, lr: float,
               betas: tuple[float, float], eps: float, weight_decay: float) -> None:  # fmt: skip
    """Step ``step`` of the table's Adam (``torch.optim.SparseAdam``'s formula) on ``rows`` (distinct) of one tier,
    in place: the numba kernel where the tier is in host memory (:mod:`graphtier.train.nn._adam_kernels`), torch ops
    on a device (:func:`adam_rows_reference`)."""
    weight = tier["weight"]
    if weight.device.type != "cpu" or weight.dtype not in (torch.float32, torch.float64):
        adam_rows_reference(tier, rows, grad, step, lr, betas, eps, weight_decay)
        return
    arrays = [tier[key].numpy() for key in FIELDS]
    adam_rows(*arrays, rows.numpy(), grad.to(weight.dtype).contiguous().numpy(), int(step), float(lr),
              float(betas[0]), float(betas[1]), float(eps), float(weight_decay))  # fmt: skip


def sum_by_id_reference(ids: Tensor, grads: Tensor) -> tuple[Tensor, Tensor]:
    """(sorted distinct ids int64 [k], float [k, D] each id's rows of ``grads`` [n, D] summed) with torch ops, on
    ``ids``' device: the reference of :func:`graphtier.train.nn._adam_kernels.sum_by_id`."""
    unique, inverse = torch.unique(ids, return_inverse=True)
    summed = torch.zeros((unique.shape[0], grads.shape[1]), dtype=grads.dtype, device=grads.device)
    summed.index_add_(0, inverse, grads)
    return unique, summed


def adam_rows_reference(tier: dict[str, Tensor], rows: Tensor, grad: Tensor, step: int, lr: float,
                        betas: tuple[float, float], eps: float, weight_decay: float) -> None:  # fmt: skip
    """Step ``step`` of the table's Adam on ``rows`` of one tier with torch ops (gather, update, scatter back), in
    place, on any device: ``torch.optim.SparseAdam``'s update plus an L2 ``weight_decay``."""
    weight = tier["weight"][rows]
    if weight_decay:
        grad = grad + weight_decay * weight
    beta1, beta2 = betas
    exp_avg = tier["exp_avg"][rows].mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq = tier["exp_avg_sq"][rows].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    step_size = lr * math.sqrt(1 - beta2**step) / (1 - beta1**step)
    weight = weight - step_size * exp_avg / exp_avg_sq.sqrt().add_(eps)
    tier["weight"][rows] = weight
    tier["exp_avg"][rows] = exp_avg
    tier["exp_avg_sq"][rows] = exp_avg_sq
    tier["steps"][rows] = step


def tiered_embeddings(model: nn.Module) -> Iterator[tuple[str, TieredEmbedding]]:
    """Every :class:`TieredEmbedding` of ``model`` with its qualified name."""
    for name, module in model.named_modules():
        if isinstance(module, TieredEmbedding):
            yield name, module


def attach_sparse_adam(optimizer: torch.optim.Optimizer, model: nn.Module) -> None:
    """Make ``optimizer.step()`` also apply the row-wise Adam of every :class:`TieredEmbedding` of ``model`` (its
    first param group's ``lr``, ``betas``, ``eps``, ``weight_decay``), and its ``state_dict()`` /
    ``load_state_dict()`` carry their moments and step counts (entry :data:`STATE_KEY`). No-op without tables."""
    tables = dict(tiered_embeddings(model))
    if not tables:
        return

    def step(opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        group = opt.param_groups[0]
        for table in tables.values():
            table.adam_step(group["lr"], tuple(group["betas"]), group["eps"], group["weight_decay"])

    def save(opt: torch.optim.Optimizer, state: dict[str, Any]) -> dict[str, Any]:
        state[STATE_KEY] = {name: {key: t.full(key) for key in FIELDS[1:]} for name, t in tables.items()}
        return state

    def load(opt: torch.optim.Optimizer, state: dict[str, Any]) -> dict[str, Any]:
        state = dict(state)
        saved = state.pop(STATE_KEY, None)
        if not isinstance(saved, dict) or set(saved) != set(tables):
            raise ValueError(f"optimizer state: expected {STATE_KEY!r} for tables {sorted(tables)}")
        for name, table in tables.items():
            for key in FIELDS[1:]:
                table.load_full(key, saved[name][key])
        return state

    optimizer.register_step_post_hook(step)
    optimizer.register_state_dict_post_hook(save)
    optimizer.register_load_state_dict_pre_hook(load)


def state_snapshot(model: nn.Module) -> dict[str, Any]:
    """A copy of ``model.state_dict()`` that later training steps do not change (the best epoch's weights): the
    tensors cloned, a learnable table on disk copied to an unlinked scratch file beside its disk tier
    (:meth:`TieredEmbedding.snapshot`), not to RAM."""
    state = model.state_dict()
    tables = {f"{name}.weight" if name else "weight": table for name, table in tiered_embeddings(model)}
    for key, value in state.items():
        table = tables.get(key)
        if table is None:
            state[key] = value.clone()
        elif value is table.cold["weight"]:  # the live disk tier itself (every row on disk): copied on disk
            state[key] = table.snapshot()
        # else: the table's state_dict() entry is already a copy (TieredEmbedding.full)
    return state
