"""Assembling the dataset from what an importer read (imports ``common`` and ``split``).

``options`` (:class:`~graphtier.dataset.importers.assemble.options.ImportOptions`, the options every importer
shares), ``finish`` (the common end of a homogeneous import: node data, ``meta.json``, validation and rename),
and the typed (heterogeneous) graph: ``typed_graph`` (per-relation edges -> the format's CSCs), ``typed_files``
(per-type and per-relation files, the end of a typed import) and ``global_adjacency`` (one adjacency over global
ids plus a type per node).
"""
