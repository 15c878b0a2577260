"""Writing a typed (heterogeneous) graph: the names of :mod:`graphtier.dataset.importers.assemble.typed_graph`.

The implementation lives with the importers because it builds each relation with the homogeneous importer's
edge spill and CSC builder (:mod:`graphtier.dataset.importers.common.edges`); this module re-exports it under the
dataset package, where the typed format's readers and tests look for it.
"""

from graphtier.dataset.importers.assemble.typed_graph import (
    TypedEdges,
    TypedNodes,
    build_typed_csc,
    require_typed_csc_memory,
    spill_relation,
    typed_csc_parts,
    with_reverse,
    write_typed_graph,
)

__all__ = [
    "TypedEdges",
    "TypedNodes",
    "build_typed_csc",
    "require_typed_csc_memory",
    "spill_relation",
    "typed_csc_parts",
    "with_reverse",
    "write_typed_graph",
]
