"""Fanouts: neighbours sampled per hop, the seed hop first (PyG order), parsed in one place (layer 0, so the
graph scores and the samplers share it; re-exported by :mod:`graphtier.sampling.fanouts`).

:meth:`Fanouts.parse` is the only parser of a fanout list: it takes the CLI's ``"25,10"`` or any
sequence of integers and returns a :class:`Fanouts` (a tuple of ints, so it compares equal to
``(25, 10)`` and serialises as a JSON list). Each entry is -1 (all neighbours) or in [1, :data:`MAX_FANOUT`].
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Self

import numpy as np

from graphtier.errors import OptionError

MAX_FANOUT = 2**31 - 1
"""The largest fanout accepted (any fanout at or above a node's in-degree takes all its neighbours)."""

DEFAULT_FANOUTS: tuple[int, ...] = (25, 10)
"""The fanouts every command and function uses unless told otherwise (seed hop first): 25 neighbours of each
seed, then 10 of each of those, a 2-layer model (the GraphSAGE paper's K=2, S1=25, S2=10; docs/decisions.md)."""

_EXPECTED = f"integers in 1..{MAX_FANOUT} or -1 (all neighbours)"


class Fanouts(tuple[int, ...]):
    """A validated, immutable fanout list: ``Fanouts.parse("25,10") == (25, 10)``."""

    def __new__(cls, values: Iterable[int] | str = DEFAULT_FANOUTS) -> Self:
        """``Fanouts(values)`` is :meth:`parse` (``values``: text, a sequence or any iterable of ints)."""
        if not isinstance(values, (str, bytes, Sequence, np.ndarray)):
            values = list(values)
        return cls.parse(values)

    @classmethod
    def parse(cls, value: Any, option: str = "fanouts") -> Self:
        """``value`` (``"25,10"``, a sequence of ints or a Fanouts) as Fanouts; a one-line OptionError naming
        ``option`` (a Python argument name, rendered as its flag on the CLI) unless it is a non-empty list of
        -1 or integers in [1, :data:`MAX_FANOUT`]."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            parts = [part.strip() for part in value.split(",") if part.strip()]
            if not parts:
                raise OptionError.invalid(option, "a comma-separated list like 25,10", value)
            entries: list[Any] = []
            for part in parts:
                try:
                    entries.append(int(part))
                except ValueError:
                    raise OptionError.invalid(option, _EXPECTED, part) from None
        elif isinstance(value, bytes) or not isinstance(value, Sequence | np.ndarray):
            raise OptionError.invalid(option, f"a list of {_EXPECTED}", value)
        else:
            entries = list(value)
        if not entries:
            raise OptionError(f"{{{option}}} expected at least one fanout, found an empty list", options=(option,))
        checked = []
        for entry in entries:
            if isinstance(entry, (bool, np.bool_)) or not isinstance(entry, (int, np.integer)):
                raise OptionError.invalid(option, _EXPECTED, entry)
            if not (entry == -1 or 1 <= entry <= MAX_FANOUT):
                raise OptionError.invalid(option, _EXPECTED, int(entry))
            checked.append(int(entry))
        return tuple.__new__(cls, checked)

    def __str__(self) -> str:
        return format_fanouts(self)


RELATION_TYPE_SEPARATOR = "___"
"""``src___name___dst``: a relation named by its type (OGB's spelling), where its name alone is ambiguous."""


class RelationFanouts(str):
    """The ``--fanouts-per-relation`` value, parsed once where it enters (the CLI, :class:`SamplerSpec`).

    Schema-free: each entry is ``NAME=F`` (``F`` at every hop) or ``NAME=F1/F2/...`` (one per hop, seed hop first),
    ``NAME`` a relation name or ``src___name___dst``; :func:`graphtier.sampling.relation_fanouts.
    parse_relation_fanouts` resolves the names against a dataset's schema once a run knows it. The value is also
    its canonical text (``RelationFanouts.parse({"writes": 5, ("paper", "cites", "paper"): [10, 5]})`` is
    ``"writes=5,paper___cites___paper=10/5"``), so it is stored and compared as the option's text; ``entries``
    holds the parsed ``(name, Fanouts)`` pairs, in the order given.
    """

    entries: tuple[tuple[str, Fanouts], ...]

    def __new__(cls, value: str | Mapping[Any, Any] = "") -> Self:
        """``RelationFanouts(value)`` is :meth:`parse`."""
        return cls.parse(value)

    @classmethod
    def parse(cls, value: Any, option: str = "fanouts_per_relation") -> Self:
        """``value`` (the option's text ``"writes=5,cites=10/5"``, a mapping keyed by names or ``(src, name, dst)``
        tuples whose values are an int, ``"F1/F2"`` text or a sequence of ints, or a RelationFanouts) parsed; a
        one-line OptionError naming ``option`` for a malformed entry, a bad fanout or a name given twice."""
        if isinstance(value, cls):
            return value
        entries: list[tuple[str, Fanouts]] = []
        for key, hops in _relation_entries(value, option):
            name = RELATION_TYPE_SEPARATOR.join(str(part) for part in key) if isinstance(key, (tuple, list)) else key
            if not isinstance(name, str) or not name:
                raise OptionError.invalid(option, "relation names or (src, name, dst) tuples as keys", key)
            if any(name == seen for seen, _ in entries):
                raise OptionError(f"{{{option}}} relation {name!r} given twice", options=(option,))
            entries.append((name, _hop_fanouts(hops, name, option)))
        text = ",".join(f"{name}={'/'.join(str(f) for f in hops)}" for name, hops in entries)
        parsed = str.__new__(cls, text)
        parsed.entries = tuple(entries)
        return parsed


def _relation_entries(value: Any, option: str) -> list[tuple[Any, Any]]:
    """``(key, fanouts)`` pairs of the option's text or mapping, in the order given."""
    if isinstance(value, Mapping):
        return list(value.items())
    if not isinstance(value, str):
        raise OptionError.invalid(option, "text like writes=5,cites=10/5 or a mapping", value)
    pairs = []
    for entry in (part.strip() for part in value.split(",")):
        if not entry:
            continue
        name, sep, hops = entry.partition("=")
        if not sep or not name.strip() or not hops.strip():
            raise OptionError.invalid(option, "entries NAME=F or NAME=F1/F2 separated by commas", entry)
        pairs.append((name.strip(), hops.strip()))
    return pairs


def _hop_fanouts(value: Any, where: str, option: str) -> Fanouts:
    """One relation's fanouts: an int, ``"F"`` / ``"F1/F2"`` text or a sequence of ints."""
    if isinstance(value, str):
        parts = [part.strip() for part in value.split("/")]
        if not all(parts):
            raise OptionError.invalid(option, f"{where}=F or {where}=F1/F2/... (one fanout per hop)", value)
        return Fanouts.parse(",".join(parts), option)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return Fanouts.parse([int(value)], option)
    return Fanouts.parse(value, option)


def format_fanouts(fanouts: Sequence[int]) -> str:
    """``(25, 10)`` -> ``"25,10"``: fanouts as the ``--fanouts`` option spells them."""
    return ",".join(str(int(f)) for f in fanouts)


def check_fanouts(fanouts: Sequence[int], name: str = "fanouts") -> list[int]:
    """The fanouts (a sequence of ints, not text: the samplers take parsed values) as a list of ints
    (:meth:`Fanouts.parse`, which raises an OptionError naming ``name``)."""
    if isinstance(fanouts, (str, bytes)):
        raise OptionError.invalid(name, f"a list of {_EXPECTED}", fanouts)
    return list(Fanouts.parse(fanouts, name))
