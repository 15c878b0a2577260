"""nvml_topology against a fake pynvml: NVSwitch fabrics, direct links, and NVML's "Not Supported" answers."""

from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np
import pytest

from graphtier.errors import OptionError
from graphtier.memory.plan.gpu_topology import nvml_topology


class NVMLError(Exception):
    """pynvml.NVMLError (str() is NVML's error string)."""


class NotSupported(NVMLError):
    def __str__(self) -> str:
        return "Not Supported"


class PciInfo:
    def __init__(self, bus: str) -> None:
        self.busId = bus.encode()


def fake_pynvml(
    remotes: list[list[str]], *, architecture: int | None = 9, unsupported: tuple[str, ...] = ()
) -> types.ModuleType:
    """GPU i's links go to ``remotes[i]``: "gpu:J" (GPU J directly) or "switch:K" (NVSwitch K)."""
    module = types.ModuleType("pynvml")
    bus_of_gpu = [f"00000000:{0x18 + 0x10 * i:02x}:00.0" for i in range(len(remotes))]

    def call(name: str, result: Any) -> Any:
        if name in unsupported:
            raise NotSupported()
        return result

    def remote(handle: int, link: int) -> str:
        if link >= len(remotes[handle]):
            raise NVMLError("Invalid Argument")
        return remotes[handle][link]

    module.__dict__.update(
        NVMLError=NVMLError,
        NVML_FEATURE_ENABLED=1,
        NVML_NVLINK_MAX_LINKS=18,
        NVML_NVLINK_DEVICE_TYPE_GPU=0,
        NVML_NVLINK_DEVICE_TYPE_SWITCH=2,
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: len(remotes),
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetPciInfo=lambda h: call("pci", PciInfo(bus_of_gpu[h])),
        nvmlDeviceGetCurrPcieLinkGeneration=lambda h: call("pcie", 5),
        nvmlDeviceGetCurrPcieLinkWidth=lambda h: call("pcie", 16),
        nvmlDeviceGetArchitecture=lambda h: call("architecture", architecture),
        nvmlDeviceGetNvLinkState=lambda h, link: 1 if remote(h, link) else 0,
        nvmlDeviceGetNvLinkVersion=lambda h, link: 7,  # NVLink 5.0 (as Hopper is known to report)
        nvmlDeviceGetNvLinkRemoteDeviceType=lambda h, link: 2 if remote(h, link).startswith("switch") else 0,
        nvmlDeviceGetNvLinkRemotePciInfo=lambda h, link: PciInfo(
            bus_of_gpu[int(remote(h, link)[4:])]
            if remote(h, link).startswith("gpu")
            else f"00000000:{0xA0 + int(remote(h, link)[7:]):02x}:00.0"
        ),
    )
    return module


def test_gpus_on_nvswitches_are_linked_all_to_all(monkeypatch: pytest.MonkeyPatch) -> None:
    hgx = [[f"switch:{link % 4}" for link in range(18)] for _ in range(4)]  # 18 NVLink4 links to 4 switches each
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(hgx))
    topology = nvml_topology()
    assert topology is not None and topology.num_gpus == 4
    expected = np.full((4, 4), 18 * 25.0)
    np.fill_diagonal(expected, 0.0)
    np.testing.assert_array_equal(topology.links, expected)
    np.testing.assert_allclose(topology.host, 3.938 * 16)
    assert topology.cliques() == [[0, 1, 2, 3]]


def test_direct_links_counted_by_version_when_the_architecture_is_not_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = [["gpu:1", "gpu:1"], ["gpu:0", "gpu:0"], [], []]
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(pairs, unsupported=("architecture", "pcie")))
    topology = nvml_topology()
    assert topology is not None
    assert topology.links[0, 1] == topology.links[1, 0] == 2 * 50.0 and topology.links[2:].sum() == 0
    np.testing.assert_array_equal(topology.host, 12.0)  # PCIe not reported: the default


def test_not_supported_outside_the_links_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml([["switch:0"]], unsupported=("pci",)))
    with pytest.raises(
        OptionError, match=r"^--gpu-topology nvml: NVML cannot describe .*\(Not Supported\); pass"
    ) as info:
        nvml_topology()
    assert "\n" not in str(info.value)
