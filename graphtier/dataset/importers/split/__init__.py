"""Splits of an import: node train/valid/test splits and the link-prediction edge splits (imports ``common``).

``splits`` (``--split`` fractions, random node splits), ``holdout`` (the random edge split of ``--edge-split``),
``time_holdout`` (the chronological one, ``--split-by time``), ``pair_files`` and ``link_files`` (an edge split
given as node-pair files) and ``typed_holdout`` (the edge split of one relation of a typed graph).
"""
