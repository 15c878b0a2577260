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

from graphtier._fanouts import RELATION_TYPE_SEPARATOR, RelationFanouts
from graphtier.dataset.schema import Relation, RelationType, Schema
from graphtier.errors import OptionError
from graphtier.sampling.fanouts import Fanouts, format_fanouts

OPTION = "fanouts_per_relation"
TYPE_SEPARATOR = RELATION_TYPE_SEPARATOR


def relation_label(schema: Schema, rel: Relation) -> str:
    """How the option names ``rel``: its name when unique in ``schema``, else ``src___name___dst``."""
    if sum(r.name == rel.name for r in schema.relations) == 1:
        return rel.name
    return TYPE_SEPARATOR.join(rel.type)


def _resolve(schema: Schema, key: Any, option: str) -> Relation:
    """The relation named by ``key`` (a name or ``src___name___dst``)."""
    known = ", ".join(relation_label(schema, r) for r in schema.relations)
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


def _per_hop(parsed: Fanouts, num_hops: int, where: str, option: str) -> Fanouts:
    """One relation's parsed fanouts as ``num_hops`` hops (a single F repeats); OptionError for another count."""
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


def parse_relation_fanouts(
    value: RelationFanouts | str | Mapping[Any, Any] | None,
    schema: Schema,
    fanouts: Sequence[int] | str,
    option: str = OPTION,
) -> dict[RelationType, Fanouts]:
    """Fanouts of every relation of ``schema``: ``fanouts`` (the ``--fanouts`` value), overridden by ``value``.

    ``value``: a :class:`RelationFanouts` (the option parsed where it entered; its text or a mapping, see the
    module, is parsed here) or None (no override); this is the one place its names meet a schema.
    Returns one :class:`Fanouts` per relation type, in schema order, all of ``len(fanouts)`` hops. Raises a
    one-line :class:`OptionError` naming ``option`` for an unknown or ambiguous relation name, a relation given
    twice, a wrong number of hops or a bad fanout.
    """
    base = Fanouts.parse(fanouts, "fanouts")
    result: dict[RelationType, Fanouts] = {rel.type: base for rel in schema.relations}
    if value is None:
        return result
    given: dict[RelationType, str] = {}
    for key, hops in RelationFanouts.parse(value, option).entries:
        rel = _resolve(schema, key, option)
        if rel.type in given:
            raise OptionError(
                f"{{{option}}} relation {relation_label(schema, rel)!r} given twice ({given[rel.type]!r} and "
                f"{hop_text(hops)!r})",
                options=(option,),
            )
        given[rel.type] = hop_text(hops)
        result[rel.type] = _per_hop(hops, len(base), relation_label(schema, rel), option)
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
