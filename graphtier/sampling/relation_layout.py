"""What every typed sampler derives from a schema once: per-relation fanouts and where each relation's rows lie.

A sampler built with a :class:`~graphtier.dataset.schema.Schema` (CPU or device, with or without time) holds one
:class:`RelationLayout`: the fanout of every relation at every hop (``fanout_table``, int64 [H, R], schema order),
the first global id of every node type, the destination type and the first CSC row of every relation. The typed
hops read these arrays; the checks that go with them (the CSC's row count, the fanouts, the range of global seeds)
live here once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from graphtier.dataset.schema import RelationType, Schema
from graphtier.errors import OptionError
from graphtier.sampling.fanouts import Fanouts


def check_typed_fanouts(fanouts: Sequence[int] | Mapping[RelationType, Sequence[int]], schema: Schema) -> np.ndarray:
    """int64 [H, R]: the fanout of every relation (schema order) at every hop.

    ``fanouts``: one list for every relation (PyG's ``num_neighbors`` as a list), or a mapping of each relation
    type of ``schema`` (and nothing else) to fanouts of one common length (PyG's dict form;
    :func:`graphtier.sampling.relation_fanouts.parse_relation_fanouts` builds it from ``--fanouts-per-relation``).
    OptionError naming ``fanouts`` otherwise."""
    if not isinstance(fanouts, Mapping):
        if isinstance(fanouts, (str, bytes)):
            raise OptionError.invalid("fanouts", "a list of ints or a mapping {(src, name, dst): fanouts}", fanouts)
        hops = Fanouts.parse(fanouts, "fanouts")
        return np.tile(np.array(hops, dtype=np.int64)[:, None], (1, len(schema.relations)))
    known = {rel.type for rel in schema.relations}
    extra = [key for key in fanouts if tuple(key) not in known]
    if extra:
        raise OptionError.invalid("fanouts", f"relation types of the schema ({sorted(known)})", extra[0])
    given = {tuple(key): value for key, value in fanouts.items()}
    missing = [rel.type for rel in schema.relations if rel.type not in given]
    if missing:
        raise OptionError(
            f"{{fanouts}} expected fanouts for every relation, missing {missing[0]}", options=("fanouts",)
        )
    table = [Fanouts.parse(given[rel.type], "fanouts") for rel in schema.relations]
    lengths = {len(hops) for hops in table}
    if len(lengths) != 1:
        raise OptionError.invalid("fanouts", "the same number of hops for every relation", sorted(lengths), show=False)
    return np.array(table, dtype=np.int64).T.copy()


@dataclass(frozen=True, eq=False)
class RelationLayout:
    """A schema as the typed hops read it (see the module).

    Attributes:
        schema: the dataset's schema (:meth:`Schema.homogeneous` for a homogeneous graph read as typed).
        fanout_table: int64 [H, R], relation ``r``'s fanout at hop ``h`` (seed hop first, -1 = all).
        type_offsets: int64 [T + 1], type ``t`` holds global ids ``[type_offsets[t], type_offsets[t + 1])``.
        target: the index of the seeds' type.
        rel_dst: int64 [R], each relation's destination type index.
        row_offset: int64 [R], each relation's first row in the back-to-back CSC.
    """

    schema: Schema
    fanout_table: np.ndarray
    type_offsets: np.ndarray
    target: int
    rel_dst: np.ndarray
    row_offset: np.ndarray

    @classmethod
    def build(
        cls,
        schema: Schema,
        fanouts: Sequence[int] | Mapping[RelationType, Sequence[int]],
        num_rows: int,
        graph: str = "indptr",
    ) -> RelationLayout:
        """The layout of ``schema`` with ``fanouts`` (:func:`check_typed_fanouts`) over a CSC of ``num_rows``
        destination rows; OptionError naming ``graph`` (the sampler's ``indptr`` or ``topology`` argument) unless
        that is the schema's row count."""
        if num_rows != schema.num_rows and graph == "indptr":
            raise OptionError(
                f"indptr: expected {schema.num_rows + 1} entries (the schema's relation rows + 1), found {num_rows + 1}"
            )
        if num_rows != schema.num_rows:
            raise OptionError(
                f"{graph}: expected {schema.num_rows} rows (the schema's relation rows), found {num_rows}"
            )
        types = schema.type_names
        return cls(
            schema=schema,
            fanout_table=check_typed_fanouts(fanouts, schema),
            type_offsets=schema.offsets(),
            target=types.index(schema.target),
            rel_dst=np.array([types.index(rel.dst) for rel in schema.relations], dtype=np.int64),
            row_offset=np.array([rel.row_offset for rel in schema.relations], dtype=np.int64),
        )

    @property
    def num_hops(self) -> int:
        """H, the number of hops."""
        return int(self.fanout_table.shape[0])

    @property
    def fanouts(self) -> dict[RelationType, Fanouts]:
        """Each relation type's fanouts, schema order."""
        return {rel.type: Fanouts(self.fanout_table[:, r].tolist()) for r, rel in enumerate(self.schema.relations)}

    def global_seeds(self, global_seeds: np.ndarray) -> np.ndarray:
        """``global_seeds`` as contiguous int64 [B]; OptionError naming ``seeds`` unless every id is a node of the
        schema (type offsets added, :meth:`Schema.offsets`)."""
        global_seeds = np.ascontiguousarray(global_seeds, dtype=np.int64)
        if global_seeds.size and (int(global_seeds.min()) < 0 or int(global_seeds.max()) >= self.schema.num_nodes):
            raise OptionError.invalid("seeds", f"global ids in [0, {self.schema.num_nodes})", "out of range ids")
        return global_seeds
