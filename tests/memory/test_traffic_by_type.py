"""Per-type feature traffic: each type's tier bytes between two readings, and their total."""

from __future__ import annotations

from graphtier.memory.features.source import TierTraffic, bytes_by_tier_by_type
from graphtier.memory.plan.placement import TIER_NAMES


def test_bytes_by_tier_by_type_splits_and_sums() -> None:
    before = {"paper": TierTraffic(gpu=10, host=5, requested=15)}
    after = {
        "paper": TierTraffic(gpu=110, host=25, requested=135),
        "author": TierTraffic.served_by("disk", 40),
    }
    total, by_type = bytes_by_tier_by_type(before, after)
    assert by_type["paper"] == {**dict.fromkeys(TIER_NAMES, 0), "gpu": 100, "host": 20}
    assert by_type["author"] == {**dict.fromkeys(TIER_NAMES, 0), "disk": 40}
    assert total == {**dict.fromkeys(TIER_NAMES, 0), "gpu": 100, "host": 20, "disk": 40}
