"""A rank started by ``torchrun``: its place among the machines, its device, and every rank's device.

``torchrun --nnodes N --nproc-per-node P`` starts P processes on each of N machines and tells each its global
``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE``. Each machine's ``--devices`` lists that
machine's P devices: local rank ``i`` uses ``devices[i]`` (``cuda:i`` for ``--devices cuda:0,cuda:1``, so
global rank ``r`` of two machines with two GPUs each uses ``cuda:(r % 2)`` of its own machine). The ranks then
tell each other their devices through the rendezvous store (``MASTER_ADDR:MASTER_PORT``, the store torchrun
already runs), so that every rank picks the same backend: NCCL when every rank of every machine is a GPU,
gloo as soon as one is a CPU (:func:`graphtier.train.dist.comm.backend_for`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

import torch.distributed as dist

from graphtier.errors import OptionError


@dataclass(frozen=True)
class TorchrunRank:
    """This process's place: global ``rank`` of ``world``, ``local_rank`` of the ``local_world`` on its machine."""

    rank: int
    world: int
    local_rank: int
    local_world: int
    device: str

    @property
    def store_ranks(self) -> list[int]:
        """The ranks of the machine that holds the rendezvous store (that of global rank 0)."""
        return list(range(self.local_world))


def torchrun_rank(env: Mapping[str, str], devices: Sequence[str]) -> TorchrunRank:
    """This rank's place from torchrun's environment ``env``, its device from this machine's ``devices``.

    Raises :class:`OptionError` naming ``--devices`` when the machine runs another number of processes than
    ``devices`` lists (``--nproc-per-node``).
    """
    rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
    local_world = int(env.get("LOCAL_WORLD_SIZE", len(devices)))
    local_rank = int(env.get("LOCAL_RANK", rank % local_world))
    if local_world != len(devices):
        raise OptionError(
            f"{{devices}} lists {len(devices)} device(s) but torchrun started {local_world} process(es) on this "
            f"machine (--nproc-per-node {local_world}; use --nproc-per-node {len(devices)} or list "
            f"{local_world} device(s))",
            options=("devices",),
        )
    return TorchrunRank(rank, world, local_rank, local_world, devices[local_rank])


def rendezvous_store(timeout: timedelta, env: Mapping[str, str] | None = None) -> dist.Store:
    """A connection of this process's own to torchrun's store, its keys under this run's (and restart's) prefix."""
    env = os.environ if env is None else env
    client = dist.TCPStore(
        env["MASTER_ADDR"], int(env["MASTER_PORT"]), is_master=False, timeout=timeout, wait_for_workers=False
    )
    run = f"{env.get('TORCHELASTIC_RUN_ID', 'run')}/{env.get('TORCHELASTIC_RESTART_COUNT', '0')}"
    return dist.PrefixStore(f"graphtier/{run}", client)


def exchange_devices(store: dist.Store, place: TorchrunRank) -> tuple[str, ...]:
    """Every rank's device, in rank order: this rank's is published in ``store``, the others' read (waiting)."""
    store.set(f"device/{place.rank}", place.device)
    return tuple(store.get(f"device/{r}").decode() for r in range(place.world))
