"""The pieces every importer shares, lowest of the importers' sub-packages (imports nothing from the others).

Reading input: ``textio`` (plain or gzip text in line-aligned chunks, one-line parse errors), the numba parsing
and CSC kernels ``kernels`` and ``_column_kernels``, ``filekind`` (what a file holds, from its first bytes),
``members`` (``PATH:KEY``: one array in an ``.npz`` or ``.mat``), ``mat_variables`` and ``mat_splits`` (a
``.mat`` file's variables and the split it holds, read safely) and ``sparse`` (scipy sparse matrices checked
before use). Edges: ``spill`` (parsed edge chunks in a scratch file) and ``edges`` (id renumbering, CSC build),
``edge_columns`` (per-edge feature and label columns). Node data: ``labels``, ``node_data`` (``--features`` and
``--labels`` files) and ``features`` (feature files in new-id order, synthetic features).
"""
