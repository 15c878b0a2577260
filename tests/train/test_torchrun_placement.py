"""Where a torchrun rank runs (issue 27 item 2): global ranks over machines, each machine's ``--devices``, the
backend every rank agrees on, and the device NCCL reduces on; pure functions, no GPU needed."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
import torch.distributed as dist

from graphtier.errors import OptionError
from graphtier.train.dist.comm import DistContext, backend_for, collective_device
from graphtier.train.dist.torchrun import TorchrunRank, exchange_devices, torchrun_rank


def _env(rank: int, world: int, local_world: int) -> dict[str, str]:
    """torchrun's environment for global ``rank`` (machines of ``local_world`` processes, node-major order)."""
    return {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank % local_world),
            "LOCAL_WORLD_SIZE": str(local_world)}  # fmt: skip


def _all_devices(places: list[TorchrunRank]) -> tuple[str, ...]:
    store = dist.HashStore()
    with ThreadPoolExecutor(len(places)) as pool:  # every rank publishes its device and reads everyone's
        seen = list(pool.map(lambda place: exchange_devices(store, place), places))
    assert all(devices == seen[0] for devices in seen)
    return seen[0]


def test_two_machines_with_two_gpus_use_nccl_and_their_own_gpu() -> None:
    places = [torchrun_rank(_env(rank, 4, 2), ["cuda:0", "cuda:1"]) for rank in range(4)]
    assert [p.rank for p in places] == [0, 1, 2, 3]
    assert [p.device for p in places] == ["cuda:0", "cuda:1", "cuda:0", "cuda:1"]  # rank r: cuda:(r % 2)
    devices = _all_devices(places)
    assert backend_for(devices) == "nccl"
    for place in places:  # NCCL reduces on the rank's own GPU of its own machine
        ctx = DistContext(rank=place.rank, world=4, devices=devices, backend="nccl")
        assert collective_device(ctx) == torch.device(f"cuda:{place.rank % 2}")
    assert places[3].store_ranks == [0, 1]  # the store lives on the machine of ranks 0 and 1


def test_a_cpu_machine_and_a_gpu_machine_agree_on_gloo() -> None:
    """Each machine lists its own devices; the exchange lets both pick gloo (NCCL cannot reduce CPU tensors)."""
    places = [torchrun_rank(_env(r, 4, 2), ["cpu", "cpu"]) for r in (0, 1)]
    places += [torchrun_rank(_env(r, 4, 2), ["cuda:0", "cuda:1"]) for r in (2, 3)]
    devices = _all_devices(places)
    assert devices == ("cpu", "cpu", "cuda:0", "cuda:1")
    assert backend_for(devices) == "gloo"
    ctx = DistContext(rank=3, world=4, devices=devices, backend="gloo")
    assert ctx.device == "cuda:1" and collective_device(ctx) == torch.device("cpu")


def test_devices_must_match_the_processes_per_machine() -> None:
    with pytest.raises(OptionError, match=r"devices.* lists 2 device\(s\) but torchrun started 3 process") as error:
        torchrun_rank(_env(4, 6, 3), ["cuda:0", "cuda:1"])
    assert "--devices" in error.value.render(cli=True) and "--nproc-per-node 2" in str(error.value)
