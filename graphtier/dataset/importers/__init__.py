"""Importers: convert public graph formats into the graphtier dataset format.

One module per format, each with ``import_<format>(source, output, *, name=None, overwrite=False,
options=ImportOptions(...), <format options>, **option_values) -> Dataset``; :class:`ImportOptions`
(:mod:`~graphtier.dataset.importers.options`) holds the options they share, and ``option_values`` sets its
fields by keyword (``import_edgelist(src, out, undirected=True)``):

* :mod:`~graphtier.dataset.importers.planetoid`: ``ind.<name>.*`` pickles (Cora, CiteSeer, PubMed);
* :mod:`~graphtier.dataset.importers.edgelist`: text edge lists (gzip, comments, headers, any ids);
* :mod:`~graphtier.dataset.importers.csr_npz`: ``indptr``/``indices`` archives (CSR or CSC);
* :mod:`~graphtier.dataset.importers.ogb`: the OGB node-property raw layout;
* :mod:`~graphtier.dataset.importers.mat`: MATLAB ``.mat`` files (adjacency, features, labels).

:mod:`~graphtier.dataset.importers.node_data` reads ``--features``/``--labels`` files (``.npy``, text
matrices, ``id,label`` pairs or one label per line) and generates synthetic labels.

The pieces every importer shares, one module each: ``textio`` (chunked text reading and parse errors),
``edges`` (edge spill, id renumbering, CSC construction), ``labels``, ``features`` (feature files and
:func:`synthetic_features`, reusable by the generator), ``splits`` (:func:`random_split`) and ``finish``
(node data, ``meta.json``, validation and rename);
:mod:`~graphtier.dataset.importers.kernels` holds the numba kernels and their references.
"""

from graphtier.dataset.importers.csr_npz import import_csr_npz
from graphtier.dataset.importers.edgelist import import_edgelist
from graphtier.dataset.importers.features import synthetic_features
from graphtier.dataset.importers.mat import import_mat
from graphtier.dataset.importers.ogb import import_ogb
from graphtier.dataset.importers.options import ImportOptions
from graphtier.dataset.importers.planetoid import import_planetoid
from graphtier.dataset.importers.splits import random_split

__all__ = [
    "ImportOptions",
    "import_csr_npz",
    "import_edgelist",
    "import_mat",
    "import_ogb",
    "import_planetoid",
    "random_split",
    "synthetic_features",
]
