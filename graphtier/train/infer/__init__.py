"""Exact layer-wise inference (homogeneous and typed) and ``predict`` for nodes and links, from a saved model.
Imports :mod:`~graphtier.train.options`, :mod:`~graphtier.train.nn` and :mod:`~graphtier.train.persist`."""
