"""Fanouts, the sampler's view: the value type lives at layer 0 (:mod:`graphtier._fanouts`) so that
:mod:`graphtier.graph.scores` (layer 2) validates fanouts with the same parser; re-exported here."""

from graphtier._fanouts import (
    DEFAULT_FANOUTS,
    MAX_FANOUT,
    Fanouts,
    check_fanouts,
    format_fanouts,
)

__all__ = ["DEFAULT_FANOUTS", "MAX_FANOUT", "Fanouts", "check_fanouts", "format_fanouts"]
