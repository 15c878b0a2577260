"""Collectives on the device the backend can reduce: NCCL only ever gets tensors on the rank's own GPU, gloo
only CPU tensors (issue 22). No GPU is needed: a process-group stand-in reports its backend and refuses
tensors on another device, and a torch-function mode lets CPU tensors pretend to live on ``cuda:N``
(values stay real, so the callers' paths run to the end and their results are checked)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_map

from graphtier import Dataset
from graphtier.train import TrainConfig, Trainer
from graphtier.train.dist import comm
from graphtier.train.dist.comm import (
    DistContext,
    all_gather_floats,
    all_reduce_gradients,
    all_reduce_sum,
    barrier,
    broadcast_parameters,
)


class _Pretend(torch.Tensor):
    """A CPU tensor that reports ``pretend_device`` (set on the per-device subclasses)."""

    __torch_function__ = torch._C._disabled_torch_function_impl
    pretend_device = torch.device("cpu")

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return self.pretend_device


_CLASSES: dict[torch.device, type[_Pretend]] = {}


def _pretend_class(device: torch.device) -> type[_Pretend]:
    if device not in _CLASSES:
        _CLASSES[device] = type(f"Pretend_{device.type}{device.index}", (_Pretend,), {"pretend_device": device})
    return _CLASSES[device]


def _requested_device(func: Any, args: tuple, kwargs: dict) -> torch.device | None:
    """The device a call moves to or creates on (``Tensor.to(...)``, ``device=`` keywords), if any."""
    candidates = list(args[1:]) if func is torch.Tensor.to else []
    candidates.append(kwargs.get("device"))
    for value in candidates:
        if isinstance(value, (str, torch.device)):
            device = torch.device(value)
            return torch.device(device.type, device.index or 0) if device.type == "cuda" else device
    if func is torch.Tensor.cpu:
        return torch.device("cpu")
    return None


class PretendCuda(TorchFunctionMode):
    """Tensors moved to or created on ``cuda:N`` become CPU tensors that report ``cuda:N``; ops on them keep
    it, ``.cpu()`` / ``.to('cpu')`` drop it, mixing devices and ``.numpy()`` raise as they would on a GPU."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = dict(kwargs or {})
        flat, _ = tree_flatten((args, kwargs))
        pretend = {t.pretend_device for t in flat if isinstance(t, _Pretend)}
        plain = [t for t in flat if isinstance(t, torch.Tensor) and not isinstance(t, _Pretend) and t.dim() > 0]
        requested = _requested_device(func, args, kwargs)

        def unwrap(v):
            return v.as_subclass(torch.Tensor) if isinstance(v, _Pretend) else v

        def cpu(v):
            return "cpu" if isinstance(v, (str, torch.device)) and torch.device(v).type == "cuda" else v

        args, kwargs = tree_map(unwrap, args), tree_map(unwrap, kwargs)
        if requested is not None:
            args = tuple(cpu(a) for a in args)
            kwargs = {k: cpu(v) for k, v in kwargs.items()}
        if func is torch.Tensor.numpy and pretend:
            raise TypeError(f"can't convert {pretend.pop()} device type tensor to numpy")
        if func is not torch.Tensor.copy_ and requested is None and (len(pretend) > 1 or (pretend and plain)):
            raise RuntimeError(f"Expected all tensors to be on the same device, found {pretend} and cpu")
        out = func(*args, **kwargs)
        device = requested if requested is not None else (next(iter(pretend)) if pretend else None)
        if func is torch.Tensor.copy_:
            device = args[0].device if not isinstance(flat[0], _Pretend) else flat[0].pretend_device
        if device is None or device.type != "cuda":
            return out
        return tree_map(lambda v: v.as_subclass(_pretend_class(device)) if isinstance(v, torch.Tensor) else v, out)


class FakeGroup:
    """Stands in for ``torch.distributed`` in :mod:`graphtier.train.dist.comm`: reports ``backend`` and refuses
    tensors not on ``device``, as NCCL refuses CPU tensors and gloo GPU tensors. The other ranks hold the
    same values as this one (sums are ``world`` times the input, gathers repeat it)."""

    ReduceOp = torch.distributed.ReduceOp

    def __init__(self, backend: str, device: str, world: int) -> None:
        self.backend = backend
        self.device = torch.device(device)
        self.world = world
        self.calls: list[str] = []

    def _check(self, name: str, tensor: torch.Tensor) -> None:
        if tensor.device != self.device:
            raise RuntimeError(f"{self.backend} {name}: tensor on {tensor.device}, this rank's device is {self.device}")

    def get_backend(self) -> str:
        return self.backend

    def all_reduce(self, tensor: torch.Tensor, op: Any = None) -> None:
        self._check("all_reduce", tensor)
        tensor.mul_(self.world)
        self.calls.append("all_reduce")

    def all_gather(self, outputs: list[torch.Tensor], tensor: torch.Tensor) -> None:
        for out in [tensor, *outputs]:
            self._check("all_gather", out)
        for out in outputs:
            out.copy_(tensor)
        self.calls.append("all_gather")

    def broadcast(self, tensor: torch.Tensor, src: int) -> None:
        self._check("broadcast", tensor)
        self.calls.append("broadcast")

    def barrier(self, device_ids: list[int] | None = None) -> None:
        if self.backend == "nccl" and device_ids != [self.device.index]:
            raise RuntimeError(f"nccl barrier: device_ids {device_ids}, this rank's device is {self.device}")
        self.calls.append("barrier")


def _install(monkeypatch: pytest.MonkeyPatch, backend: str, device: str, world: int) -> FakeGroup:
    group = FakeGroup(backend, device, world)
    monkeypatch.setattr(comm, "dist", group)
    return group


def _small_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))


@pytest.mark.parametrize(
    ("backend", "devices", "rank", "values_on"),
    [
        ("nccl", ("cuda:0", "cuda:1"), 1, "cpu"),  # totals and accuracy counts are built on the CPU
        ("nccl", ("cuda:0", "cuda:1"), 1, "cuda:1"),
        ("gloo", ("cpu", "cuda:0"), 1, "cuda:0"),  # a hybrid run's GPU rank
        ("gloo", ("cpu", "cuda:0"), 0, "cpu"),
    ],
)
def test_every_collective_runs_on_the_device_the_backend_reduces(
    monkeypatch: pytest.MonkeyPatch, backend: str, devices: tuple[str, ...], rank: int, values_on: str
) -> None:
    ctx = DistContext(rank=rank, world=2, devices=devices, backend=backend)
    group = _install(monkeypatch, backend, devices[rank] if backend == "nccl" else "cpu", world=2)
    with PretendCuda():
        values = torch.tensor([1.0, 2.5], dtype=torch.float64).to(values_on)
        summed = all_reduce_sum(ctx, values)
        assert summed.device == values.device
        assert summed.cpu().tolist() == [2.0, 5.0]
        gathered = all_gather_floats(ctx, [3.0, 4.0])
        assert gathered.device.type == "cpu" and gathered.numpy().tolist() == [[3.0, 4.0], [3.0, 4.0]]
        model = _small_model()  # CPU parameters: under NCCL they go to the GPU for the collective and back
        model(torch.ones(5, 3)).sum().backward()
        grads = [p.grad.cpu().clone() for p in model.parameters()]
        all_reduce_gradients(ctx, model)
        for param, before in zip(model.parameters(), grads):
            assert param.grad.device == param.device
            assert torch.equal(param.grad.cpu(), 2 * before)
        broadcast_parameters(ctx, model)
        assert all(t.device.type == "cpu" for t in [*model.parameters(), *model.buffers()])
        barrier(ctx)
    assert {"all_reduce", "all_gather", "broadcast", "barrier"} <= set(group.calls)


def test_a_gpu_only_trainer_hands_nccl_only_gpu_tensors(tiny_dataset: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    """The trainer's own paths (workload barrier, gradient all-reduce, window gather, epoch totals, traffic,
    sampled accuracy, the parameter broadcasts) under an NCCL group: before issue 22 the epoch totals, built
    on the CPU, went to NCCL as they were."""
    ctx = DistContext(rank=0, world=1, devices=("cuda:0",), backend="nccl")
    group = _install(monkeypatch, "nccl", "cuda:0", world=1)
    config = TrainConfig(
        fanouts=(5, 5), batch_size=50, epochs=1, hidden=8, eval_every=1, rebalance_every=2, norm="batch", quiet=True
    )
    with PretendCuda():
        trainer = Trainer(tiny_dataset, config, dist=ctx)
        report = trainer.fit()
    record = report["epochs"][0]
    assert record["valid_acc"] is not None and np.isfinite(record["loss"])
    assert {"all_reduce", "all_gather", "broadcast", "barrier"} <= set(group.calls)
    # one broadcast per dtype (float32 parameters, int64 BatchNorm counters) at start and at every window
    windows = -(-record["batches"] // config.distributed.rebalance_every)
    assert group.calls.count("broadcast") == 2 * (1 + windows)
