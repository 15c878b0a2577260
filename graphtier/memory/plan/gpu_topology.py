"""GPU interconnect topologies for the multi-GPU placement solver (:mod:`graphtier.memory.plan.placement_solver`).

A topology is a link matrix: ``links_gbps[i][j]`` is the bandwidth in GB/s (10^9 bytes per second,
one direction) of the direct GPU-to-GPU link from GPU ``i`` to GPU ``j`` (0 = no direct link; the
diagonal is ignored), plus each GPU's host link (``host_gbps``, PCIe to pinned host memory) and its
own memory bandwidth (``local_gbps``). It comes from a JSON file::

    {"name": "dgx1-v100", "description": "...",
     "links_gbps": [[0, 25, 25, 50, 50, 0, 0, 0], ...],
     "host_gbps": 12.0,            # one number for every GPU, or a list of one per GPU
     "local_gbps": 900.0}          # likewise

from the files shipped in ``graphtier/memory/plan/topologies/`` (:func:`shipped_topology`, by name), or
from NVML when the optional ``nvidia-ml-py`` package and a driver are present (:func:`nvml_topology`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from graphtier.errors import OptionError

TOPOLOGY_DIR = Path(__file__).resolve().parent / "topologies"
# GB/s per NVLink and direction, by nvmlDeviceGetArchitecture (Pascal 4, Volta 5, Ampere 7, Hopper 9, Blackwell 10)
NVLINK_GBPS_BY_ARCHITECTURE = {4: 20.0, 5: 25.0, 7: 25.0, 9: 25.0, 10: 50.0}
# ... else by nvmlNvlinkVersion_t (1.0, 2.0, 2.2, 3.0, 3.1, 4.0, 5.0); Hopper is known to report 5.0
NVLINK_GBPS_PER_VERSION = {1: 20.0, 2: 25.0, 3: 25.0, 4: 25.0, 5: 25.0, 6: 25.0, 7: 50.0}
NVLINK_REMOTE_SWITCH = 2  # NVML_NVLINK_DEVICE_TYPE_SWITCH
PCIE_GBPS_PER_LANE = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}


@dataclass(frozen=True)
class GpuTopology:
    """``links`` float64 [G, G] GB/s (0 = no link, zero diagonal); ``host`` and ``local`` float64 [G] GB/s."""

    name: str
    links: np.ndarray
    host: np.ndarray
    local: np.ndarray
    description: str = ""

    @property
    def num_gpus(self) -> int:
        return int(self.links.shape[0])

    def neighbours(self, gpu: int) -> list[int]:
        """GPUs with a direct link to ``gpu`` (either direction counts only if ``links[j, gpu] > 0``)."""
        return [j for j in range(self.num_gpus) if j != gpu and self.links[j, gpu] > 0]

    def subset(self, gpus: Sequence[int]) -> GpuTopology:
        """The topology restricted to ``gpus`` (renumbered 0..len-1 in the given order)."""
        ids = [int(g) for g in gpus]
        if len(set(ids)) != len(ids) or any(not 0 <= g < self.num_gpus for g in ids):
            raise OptionError(f"gpus: expected distinct ids in [0, {self.num_gpus}), found {list(gpus)}")
        index = np.asarray(ids, dtype=np.int64)
        return GpuTopology(
            f"{self.name}[{','.join(map(str, ids))}]",
            self.links[np.ix_(index, index)].copy(),
            self.host[index].copy(),
            self.local[index].copy(),
            self.description,
        )

    def cliques(self) -> list[list[int]]:
        """A partition of the GPUs into groups that are all directly linked to each other.

        Greedy: the lowest free GPU starts a group, then free GPUs linked (both ways) to every member
        join, the one with the most bandwidth to the group first. Singletons where there is no link.
        """
        free = list(range(self.num_gpus))
        groups: list[list[int]] = []
        while free:
            group = [free.pop(0)]
            while True:
                fits = [g for g in free if all(self.links[g, m] > 0 and self.links[m, g] > 0 for m in group)]
                if not fits:
                    break
                best = max(fits, key=lambda g: (sum(self.links[g, m] + self.links[m, g] for m in group), -g))
                group.append(best)
                free.remove(best)
            groups.append(sorted(group))
        return groups

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "links_gbps": self.links.tolist(),
            "host_gbps": self.host.tolist(),
            "local_gbps": self.local.tolist(),
        }


def _per_gpu(value: Any, num_gpus: int, field: str, source: str) -> np.ndarray:
    array = np.full(num_gpus, value, dtype=np.float64) if isinstance(value, (int, float)) else None
    if array is None:
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise OptionError(
                f"{source}: field {field!r}: expected a number or a list of numbers, found {value!r}"
            ) from None
    if array.shape != (num_gpus,) or not np.all(np.isfinite(array)) or np.any(array <= 0):
        raise OptionError(f"{source}: field {field!r}: expected {num_gpus} positive numbers (GB/s), found {value!r}")
    return array


def topology_from_dict(document: Any, source: str = "topology") -> GpuTopology:
    """Validate a topology document (see the module docstring); OptionError naming ``source`` and the field."""
    if not isinstance(document, dict):
        raise OptionError(f"{source}: expected a JSON object, found {type(document).__name__}")
    for field in ("links_gbps", "host_gbps"):
        if field not in document:
            raise OptionError(f"{source}: expected a field {field!r}, found fields {sorted(document)}")
    try:
        links = np.asarray(document["links_gbps"], dtype=np.float64)
    except (TypeError, ValueError):
        raise OptionError(f"{source}: field 'links_gbps': expected a square matrix of numbers") from None
    if links.ndim != 2 or links.shape[0] != links.shape[1] or links.shape[0] < 1:
        raise OptionError(f"{source}: field 'links_gbps': expected a square G x G matrix, found shape {links.shape}")
    if not np.all(np.isfinite(links)) or np.any(links < 0):
        raise OptionError(f"{source}: field 'links_gbps': expected bandwidths >= 0 (GB/s), found {links.min()}")
    num_gpus = links.shape[0]
    links = links.copy()
    np.fill_diagonal(links, 0.0)
    host = _per_gpu(document["host_gbps"], num_gpus, "host_gbps", source)
    local = _per_gpu(document.get("local_gbps", 900.0), num_gpus, "local_gbps", source)
    return GpuTopology(
        str(document.get("name", Path(source).stem)), links, host, local, str(document.get("description", ""))
    )


def load_topology(path: str | Path) -> GpuTopology:
    """A topology from a JSON file (``--gpu-topology FILE.json``)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise OptionError(f"--gpu-topology: cannot read {path} ({exc.strerror})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OptionError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    return topology_from_dict(document, str(path))


def shipped_topology_names() -> list[str]:
    """Names of the topology files shipped with graphtier (``graphtier/memory/plan/topologies/*.json``)."""
    return sorted(p.stem for p in TOPOLOGY_DIR.glob("*.json"))


def shipped_topology(name: str) -> GpuTopology:
    """A shipped topology by name (``dgx1-v100``, ``nvswitch-8``, ``pcie-4``, ``nvlink-pairs-4``)."""
    names = shipped_topology_names()
    if name not in names:
        raise OptionError(f"--gpu-topology: expected a file or one of {', '.join(names)}, found {name!r}")
    return load_topology(TOPOLOGY_DIR / f"{name}.json")


def resolve_topology(text: str) -> GpuTopology:
    """``text`` is a shipped name or a JSON file path."""
    return shipped_topology(text) if text in shipped_topology_names() else load_topology(text)


def nvml_topology(local_gbps: float = 900.0) -> GpuTopology | None:
    """The machine's topology from NVML, or None when ``nvidia-ml-py`` or the driver is missing.

    Each active NVLink adds its per-link bandwidth (by the GPU's architecture, else the link's NVLink
    version) to the pair it joins: a link to another GPU (``nvmlDeviceGetNvLinkRemotePciInfo``) to that
    pair, a link to an NVSwitch (HGX/DGX machines) to the GPU's switch bandwidth, and two GPUs on the
    switches are linked by the smaller of their switch bandwidths (the switches are taken as one
    fabric). The host link is the PCIe generation x width (12 GB/s where NVML cannot tell). An NVML
    error outside the links (e.g. "Not Supported" in a VM) is an OptionError of one line.
    """
    try:
        import pynvml  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        return _read_nvml(pynvml, local_gbps)
    except pynvml.NVMLError as exc:
        raise OptionError(
            f"--gpu-topology nvml: NVML cannot describe this machine's GPUs ({exc}); pass a shipped name "
            f"({', '.join(shipped_topology_names())}) or a JSON file instead"
        ) from None
    finally:
        pynvml.nvmlShutdown()


def _read_nvml(nvml: Any, local_gbps: float) -> GpuTopology:
    count = int(nvml.nvmlDeviceGetCount())
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    bus_ids = [_bus_id(nvml.nvmlDeviceGetPciInfo(h)) for h in handles]
    links = np.zeros((count, count), dtype=np.float64)
    switch = np.zeros(count, dtype=np.float64)
    host = np.zeros(count, dtype=np.float64)
    remote_type = getattr(nvml, "nvmlDeviceGetNvLinkRemoteDeviceType", None)
    switch_type = getattr(nvml, "NVML_NVLINK_DEVICE_TYPE_SWITCH", NVLINK_REMOTE_SWITCH)
    for i, handle in enumerate(handles):
        try:
            generation = nvml.nvmlDeviceGetCurrPcieLinkGeneration(handle)
            width = nvml.nvmlDeviceGetCurrPcieLinkWidth(handle)
            host[i] = PCIE_GBPS_PER_LANE.get(int(generation), 0.985) * int(width)
        except nvml.NVMLError:
            pass  # not reported (e.g. a VM): the default below
        try:
            architecture: int | None = int(nvml.nvmlDeviceGetArchitecture(handle))
        except (nvml.NVMLError, AttributeError):
            architecture = None
        for link in range(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18)):
            try:
                if nvml.nvmlDeviceGetNvLinkState(handle, link) != nvml.NVML_FEATURE_ENABLED:
                    continue
                gbps = NVLINK_GBPS_BY_ARCHITECTURE.get(architecture) if architecture is not None else None
                if gbps is None:
                    gbps = NVLINK_GBPS_PER_VERSION.get(int(nvml.nvmlDeviceGetNvLinkVersion(handle, link)), 25.0)
                if remote_type is not None and int(remote_type(handle, link)) == int(switch_type):
                    switch[i] += gbps
                    continue
                remote = _bus_id(nvml.nvmlDeviceGetNvLinkRemotePciInfo(handle, link))
            except nvml.NVMLError:
                continue  # a link NVML does not report (absent, down or not supported)
            if remote in bus_ids:
                links[i, bus_ids.index(remote)] += gbps
    links += np.minimum.outer(switch, switch)
    host[host <= 0] = 12.0
    np.fill_diagonal(links, 0.0)
    return GpuTopology("nvml", links, host, np.full(count, local_gbps), "read from NVML")


def _bus_id(info: Any) -> str:
    bus = info.busId
    return (bus.decode() if isinstance(bus, bytes) else str(bus)).lower()[-12:]
