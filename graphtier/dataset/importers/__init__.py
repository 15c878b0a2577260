"""Importers: convert public graph formats into the graphtier dataset format.

One module per format, each with ``import_<format>(source, output, *, name=None, overwrite=False,
options=ImportOptions(...), <format options>, **option_values) -> Dataset``; :class:`ImportOptions`
(:mod:`~graphtier.dataset.importers.assemble.options`) holds the options they share, and ``option_values`` sets its
fields by keyword (``import_edgelist(src, out, undirected=True)``):

* :mod:`~graphtier.dataset.importers.formats.planetoid`: ``ind.<name>.*`` pickles (Cora, CiteSeer, PubMed);
* :mod:`~graphtier.dataset.importers.formats.edgelist`: text edge lists (gzip, comments, headers, any ids);
* :mod:`~graphtier.dataset.importers.formats.csr_npz`: ``indptr``/``indices`` archives (CSR or CSC);
* :mod:`~graphtier.dataset.importers.formats.ogb`: the OGB node-property raw layout;
* :mod:`~graphtier.dataset.importers.formats.mat`: MATLAB ``.mat`` files (adjacency, features, labels);
* ``formats.manifest`` and ``formats.movielens`` (typed graphs; imported from their modules).

The modules lie in four sub-packages, each importing only from the ones before it (tests/test_architecture.py):

1. :mod:`~graphtier.dataset.importers.common`: the pieces every importer shares: ``textio`` (chunked text
   reading and parse errors), ``kernels`` (the numba kernels and their references), ``members`` (``PATH:KEY``),
   ``edges`` (edge spill, id renumbering, CSC construction), ``labels``, ``node_data`` (``--features`` and
   ``--labels`` files) and ``features`` (feature files and :func:`synthetic_features`, reusable by the generator);
2. :mod:`~graphtier.dataset.importers.split`: node splits (``splits``, :func:`random_split`) and the link
   holdouts (random, by time, typed, from given pair files);
3. :mod:`~graphtier.dataset.importers.assemble`: the shared options, ``finish`` (node data, ``meta.json``,
   validation and rename) and the typed graph build;
4. :mod:`~graphtier.dataset.importers.formats`: one module (or a few) per format.

This package re-exports the public names below; import anything else from its defining module.
"""

from graphtier.dataset.importers.assemble.options import ImportOptions
from graphtier.dataset.importers.common.features import synthetic_features
from graphtier.dataset.importers.formats.csr_npz import import_csr_npz
from graphtier.dataset.importers.formats.edgelist import import_edgelist
from graphtier.dataset.importers.formats.mat import import_mat
from graphtier.dataset.importers.formats.ogb import import_ogb
from graphtier.dataset.importers.formats.planetoid import import_planetoid
from graphtier.dataset.importers.split.splits import random_split

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
