"""Fanouts per relation (``--fanouts-per-relation writes=5,cites=10/5``), parsed in one place.

``--fanouts`` applies to every relation; ``--fanouts-per-relation`` overrides some of them. Each entry is
``NAME=F`` (``F`` neighbours at every hop) or ``NAME=F1/F2/...`` (one per hop, the seed hop first; as many as
``--fanouts`` has). ``NAME`` is a relation's name when no other relation shares it, else ``src___name___dst``
(OGB's spelling of a relation type). A Python caller may pass a mapping instead, keyed by such names or by
``(src, name, dst)`` tuples, whose values are an int, the ``F1/F2`` text or a sequence of ints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graphtier.dataset.schema import Relation, RelationType, Schema
from graphtier.errors import OptionError
from graphtier.sampling.fanouts import Fanouts, format_fanouts

OPTION = "fanouts_per_relation"
TYPE_SEPARATOR = "___"


def relation_label(schema: Schema, rel: Relation) -> str:
    """How the option names ``rel``: its name when unique in ``schema``, else ``src___name___dst``."""
    if sum(r.name == rel.name for r in schema.relations) == 1:
        return rel.name
    return TYPE_SEPARATOR.join(rel.type)


def _resolve(schema: Schema, key: Any, option: str) -> Relation:
    """The relation named by ``key`` (a name, ``src___name___dst`` or a ``(src, name, dst)`` tuple)."""
    known = ", ".join(relation_label(schema, r) for r in schema.relations)
    if isinstance(key, (tuple, list)) and len(key) == 3 and all(isinstance(part, str) for part in key):
        for rel in schema.relations:
            if rel.type == tuple(key):
                return rel
        raise OptionError(f"{{{option}}} unknown relation {tuple(key)} (relations: {known})", options=(option,))
    if not isinstance(key, str) or not key:
        raise OptionError.invalid(option, "relation names or (src, name, dst) tuples as keys", key)
    if TYPE_SEPARATOR in key:
        parts = tuple(key.split(TYPE_SEPARATOR))
        for rel in schema.relations:
            if rel.type == parts:
                return rel
        raise OptionError(f"{{{option}}} unknown relation {key!r} (relations: {known})", options=(option,))
    found = [r for r in schema.relations if r.name == key]
    if not found:
        raise OptionError(f"{{{option}}} unknown relation {key!r} (relations: {known})", options=(option,))
    if len(found) > 1:
        spelled = " or ".join(TYPE_SEPARATOR.join(r.type) for r in found)
        raise OptionError(
            f"{{{option}}} relation name {key!r} is ambiguous: {len(found)} relations share it; write {spelled}",
            options=(option,),
        )
    return found[0]


def _hop_fanouts(value: Any, num_hops: int, where: str, option: str) -> Fanouts:
    """``value`` (an int, ``"F"``, ``"F1/F2"`` or a sequence) as Fanouts of ``num_hops`` hops (a single F repeats)."""
    if isinstance(value, str):
        parts = [part.strip() for part in value.split("/")]
        if not all(parts):
            raise OptionError.invalid(option, f"{where}=F or {where}=F1/F2/... (one fanout per hop)", value)
        parsed = Fanouts.parse(",".join(parts), option)
    elif isinstance(value, int) and not isinstance(value, bool):
        parsed = Fanouts.parse([value], option)
    else:
        parsed = Fanouts.parse(value, option)
    if len(parsed) == 1 and num_hops > 1:
        return Fanouts.parse(list(parsed) * num_hops, option)
    if len(parsed) != num_hops:
        raise OptionError(
            f"{{{option}}} {where}: expected 1 or {num_hops} fanouts (one per hop, as fanouts has), "
            f"found {len(parsed)} ({hop_text(parsed)})",
            options=(option,),
        )
    return parsed


def hop_text(fanouts: Sequence[int]) -> str:
    """``"10/5"``: one relation's fanouts per hop as ``--fanouts-per-relation`` spells them."""
    return "/".join(str(f) for f in fanouts)


def _entries(value: str | Mapping[Any, Any], option: str) -> list[tuple[Any, Any]]:
    """``(key, fanouts)`` pairs of the option's text or mapping, in the order given."""
    if isinstance(value, Mapping):
        return list(value.items())
    if not isinstance(value, str):
        raise OptionError.invalid(option, "text like writes=5,cites=10/5 or a mapping", value)
    pairs = []
    for entry in (part.strip() for part in value.split(",")):
        if not entry:
            continue
        name, sep, fanouts = entry.partition("=")
        if not sep or not name.strip() or not fanouts.strip():
            raise OptionError.invalid(option, "entries NAME=F or NAME=F1/F2 separated by commas", entry)
        pairs.append((name.strip(), fanouts.strip()))
    return pairs


def parse_relation_fanouts(
    value: str | Mapping[Any, Any] | None,
    schema: Schema,
    fanouts: Sequence[int] | str,
    option: str = OPTION,
) -> dict[RelationType, Fanouts]:
    """Fanouts of every relation of ``schema``: ``fanouts`` (the ``--fanouts`` value), overridden by ``value``.

    ``value``: the option's text (``"writes=5,cites=10/5"``), a mapping (see the module) or None (no override).
    Returns one :class:`Fanouts` per relation type, in schema order, all of ``len(fanouts)`` hops. Raises a
    one-line :class:`OptionError` naming ``option`` for an unknown or ambiguous relation name, a relation given
    twice, a wrong number of hops or a bad fanout.
    """
    base = Fanouts.parse(fanouts, "fanouts")
    result: dict[RelationType, Fanouts] = {rel.type: base for rel in schema.relations}
    if value is None:
        return result
    given: dict[RelationType, Any] = {}
    for key, hops in _entries(value, option):
        rel = _resolve(schema, key, option)
        if rel.type in given:
            raise OptionError(
                f"{{{option}}} relation {relation_label(schema, rel)!r} given twice ({given[rel.type]!r} and {hops!r})",
                options=(option,),
            )
        given[rel.type] = hops
        result[rel.type] = _hop_fanouts(hops, len(base), relation_label(schema, rel), option)
    return result


def differing_fanouts_text(value: str | Mapping[Any, Any] | None, schema: Schema, fanouts: Sequence[int] | str) -> str:
    """The relations whose fanouts :func:`parse_relation_fanouts` sets apart from ``fanouts``, as the start line
    shows them: ``"writes 1,1; cites 10,5"`` ("" when every relation samples ``fanouts``)."""
    base = Fanouts.parse(fanouts, "fanouts")
    parsed = parse_relation_fanouts(value, schema, base)
    return "; ".join(
        f"{relation_label(schema, rel)} {format_fanouts(parsed[rel.type])}"
        for rel in schema.relations
        if parsed[rel.type] != base
    )
