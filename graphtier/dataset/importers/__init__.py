"""Importers: convert public graph formats into the graphtier dataset format.

One module per format, each with ``import_<format>(source, output, *, name=None, overwrite=False,
...) -> Dataset``:

* :mod:`~graphtier.dataset.importers.planetoid`: ``ind.<name>.*`` pickles (Cora, CiteSeer, PubMed);
* :mod:`~graphtier.dataset.importers.edgelist`: text edge lists (gzip, comments, headers, any ids);
* :mod:`~graphtier.dataset.importers.csr_npz`: ``indptr``/``indices`` archives (CSR or CSC);
* :mod:`~graphtier.dataset.importers.ogb`: the OGB node-property raw layout;
* :mod:`~graphtier.dataset.importers.mat`: MATLAB ``.mat`` files (adjacency, features, labels).

:mod:`~graphtier.dataset.importers.node_data` reads ``--features``/``--labels`` files (``.npy``, text
matrices, ``id,label`` pairs or one label per line) and generates synthetic labels.

:mod:`~graphtier.dataset.importers.common` holds the shared chunked parsing, id remapping and CSC
construction, plus :func:`random_split` and :func:`synthetic_features` (reusable by the generator);
:mod:`~graphtier.dataset.importers.kernels` holds the numba kernels and their references.
"""

from graphtier.dataset.importers.common import random_split, synthetic_features
from graphtier.dataset.importers.csr_npz import import_csr_npz
from graphtier.dataset.importers.edgelist import import_edgelist
from graphtier.dataset.importers.mat import import_mat
from graphtier.dataset.importers.ogb import import_ogb
from graphtier.dataset.importers.planetoid import import_planetoid

__all__ = [
    "import_csr_npz",
    "import_edgelist",
    "import_mat",
    "import_ogb",
    "import_planetoid",
    "random_split",
    "synthetic_features",
]
