"""The importers, one module per input format, top of the importers' sub-packages (imports all the others).

``edgelist`` (text edge lists), ``csr_npz`` (``indptr``/``indices`` archives), ``planetoid`` (Cora, CiteSeer,
PubMed pickles), ``mat`` and ``mat_typed`` (MATLAB ``.mat`` files, one graph or several), ``manifest`` (a typed
graph described by a manifest), ``movielens`` (MovieLens-100k for link prediction) and OGB's raw layouts:
``ogb`` (node and link property), ``ogb_hetero`` (ogbn-mag), ``ogb_edges``, ``ogb_files`` and ``ogb_link`` (its
per-edge files, small files and link split).
"""
