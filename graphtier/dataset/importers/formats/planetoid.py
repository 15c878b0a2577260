"""Import a Planetoid dataset (Cora, CiteSeer, PubMed): ``graphtier prepare planetoid SOURCE OUTPUT``.

``SOURCE`` holds ``ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index}`` (Python-2 pickles, read with
a restricted unpickler that admits only numpy arrays, scipy sparse matrices and plain
containers). As in PyTorch Geometric: edges are made symmetric, deduplicated and stripped of
self-loops; the public split is train = the first ``len(y)`` (20 per class) nodes, valid = the
next 500, test = ``test.index``. CiteSeer's test index range has holes (isolated test nodes missing
from ``tx``): the test block is widened to the whole range with zero feature rows, and nodes
without a one-hot label get label -1 (PyG gives them class 0).
"""

from __future__ import annotations

import io
import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset import resources
from graphtier.dataset.finite import NonFiniteGuard
from graphtier.dataset.format import Dataset
from graphtier.dataset.importers.assemble import finish
from graphtier.dataset.importers.assemble.options import PLANETOID_FIELDS, ImportOptions
from graphtier.dataset.importers.common import edges, textio
from graphtier.dataset.importers.common.features import note_replaced
from graphtier.dataset.importers.common.labels import check_class_count
from graphtier.dataset.importers.common.sparse import checked_sparse
from graphtier.dataset.importers.split import splits
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError, OptionError

PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph")
VALID_SIZE = 500


def _allowed_globals() -> dict[tuple[str, str], Any]:
    """(module, name) pairs the Planetoid pickles may reference, old (Python 2 / scipy < 1.8) names included."""
    from numpy._core.multiarray import _reconstruct, scalar

    allowed: dict[tuple[str, str], Any] = {}
    for module in ("numpy.core.multiarray", "numpy._core.multiarray"):
        allowed[(module, "_reconstruct")] = _reconstruct
        allowed[(module, "scalar")] = scalar
    allowed[("numpy", "ndarray")] = np.ndarray
    allowed[("numpy", "dtype")] = np.dtype
    for fmt, cls in (("csr", sp.csr_matrix), ("csc", sp.csc_matrix), ("coo", sp.coo_matrix), ("lil", sp.lil_matrix)):
        for module in (f"scipy.sparse.{fmt}", f"scipy.sparse._{fmt}", "scipy.sparse"):
            allowed[(module, f"{fmt}_matrix")] = cls
    for module in ("__builtin__", "builtins"):
        for builtin_name, obj in (
            ("list", list),
            ("dict", dict),
            ("set", set),
            ("tuple", tuple),
            ("int", int),
            ("float", float),
            ("object", object),
        ):
            allowed[(module, builtin_name)] = obj
    # Python-3 protocol-2 pickles encode bytes with _codecs.encode(str, "latin1"): harmless.
    allowed[("_codecs", "encode")] = __import__("codecs").encode
    allowed[("collections", "defaultdict")] = __import__("collections").defaultdict
    allowed[("collections", "OrderedDict")] = __import__("collections").OrderedDict
    allowed[("copy_reg", "_reconstructor")] = __import__("copyreg")._reconstructor
    allowed[("copyreg", "_reconstructor")] = __import__("copyreg")._reconstructor
    return allowed


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that only resolves numpy/scipy array types and builtin containers."""

    def __init__(self, file: io.BufferedIOBase, path: Path) -> None:
        super().__init__(file, encoding="latin1")
        self.path = path
        self.allowed = _allowed_globals()

    def find_class(self, module: str, name: str) -> Any:
        try:
            return self.allowed[(module, name)]
        except KeyError:
            raise DatasetError(
                f"{self.path}: expected only numpy/scipy arrays in the pickle, found a reference to {module}.{name}"
            ) from None


def load_pickle(path: Path) -> Any:
    """Load one Planetoid pickle with :class:`RestrictedUnpickler`; errors become :class:`DatasetError`."""
    try:
        with open(path, "rb") as f:
            return RestrictedUnpickler(f, path).load()
    except DatasetError:
        raise
    except Exception as exc:  # any damage in the pickle stream
        raise DatasetError(f"{path}: not a readable Planetoid pickle ({type(exc).__name__}: {exc})") from None


def detect_name(source: Path) -> str:
    """The ``<name>`` of the single ``ind.<name>.graph`` in ``source``."""
    found = sorted(p.name[len("ind.") : -len(".graph")] for p in source.glob("ind.*.graph"))
    if len(found) != 1:
        raise DatasetError(
            f"{source}: expected exactly one ind.<name>.graph file, found {len(found)}"
            + (f" ({', '.join(found)}); pass --dataset" if found else "")
        )
    return found[0]


def _dense(path: Path, value: Any, what: str) -> np.ndarray:
    if sp.issparse(value):
        value = checked_sparse(value, path)  # a crafted matrix would make toarray write out of bounds
        resources.require_memory(int(np.prod(value.shape, dtype=object)) * value.dtype.itemsize, f"{path}: densifying")
        value = np.asarray(value.toarray())
    if isinstance(value, np.ndarray) and value.ndim == 2:
        if value.dtype.kind not in "biuf":
            raise DatasetError(f"{path}: expected a numeric {what} matrix, found dtype {value.dtype}")
        return value
    raise DatasetError(f"{path}: expected a 2-d {what} matrix, found {type(value).__name__}")


def _node_id(path: Path, value: Any, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise DatasetError(f"{path}: expected integer node ids as {what}, found {type(value).__name__} {value!r:.40}")
    return int(value)


def graph_edges(path: Path, graph: dict[Any, Any], num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """``(src, dst)`` int64 [E] of the adjacency-list dict ``{node: [neighbours]}``, ids checked in [0, N)."""
    src_list, dst_list = [], []
    for node, neighbours in graph.items():
        source = _node_id(path, node, "dict keys")
        if not isinstance(neighbours, (list, tuple, set, frozenset, np.ndarray)):
            raise DatasetError(
                f"{path}: expected a list of neighbour ids for node {source}, found {type(neighbours).__name__}"
            )
        nbrs = np.array([_node_id(path, v, "neighbours") for v in neighbours], dtype=np.int64)
        src_list.append(np.full(nbrs.shape[0], source, dtype=np.int64))
        dst_list.append(nbrs)
    src = np.concatenate(src_list) if src_list else np.empty(0, np.int64)
    dst = np.concatenate(dst_list) if dst_list else np.empty(0, np.int64)
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= num_nodes):
        raise DatasetError(
            f"{path}: expected node ids in [0, {num_nodes}), found ids in "
            f"[{min(src.min(), dst.min())}, {max(src.max(), dst.max())}]"
        )
    return src, dst


def import_planetoid(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    name: str | None = None,
    overwrite: bool = False,
    dataset: str | None = None,
    options: ImportOptions | None = None,
    progress: Progress = NO_PROGRESS,
    **option_values: Any,
) -> Dataset:
    """Import the Planetoid files in directory ``source`` into ``output``.

    Args:
        source: directory with ``ind.<dataset>.*``.
        output: dataset directory to create.
        name: dataset name (default: ``<dataset>``).
        dataset: the ``<dataset>`` part of the file names (default: detected).
        options, option_values: the shared :class:`ImportOptions`; Planetoid takes only ``non_finite``
            (:data:`PLANETOID_FIELDS`: ``error`` refuses NaN/±Inf features, ``replace`` sets them to 0,
            counted in ``meta.json`` ``source.non_finite_replaced``) and the edge split (``edge_split``,
            ``eval_negatives``, ``seed``); its graph and node split are fixed.
        progress: reports building the CSC and validating.

    Returns:
        The written :class:`Dataset`: float32 features [N, D], int64 labels, undirected CSC graph,
        the public split.
    """
    root = Path(source)
    options = ImportOptions.of(options, option_values)
    options.check_accepted(PLANETOID_FIELDS, "planetoid")
    options.check_inputs()
    if not root.is_dir():
        raise DatasetError(f"{root}: Planetoid directory not found")
    dataset = dataset or detect_name(root)
    parts: dict[str, Any] = {}
    for part in PARTS:
        parts[part] = load_pickle(textio.require_file(root / f"ind.{dataset}.{part}", "Planetoid file"))
    test_path = textio.require_file(root / f"ind.{dataset}.test.index", "Planetoid file")
    try:
        test_index = np.array([int(line) for line in test_path.read_text().split()], dtype=np.int64)
    except ValueError as exc:
        raise DatasetError(f"{test_path}: expected one integer node id per line ({exc})") from None

    paths = {part: root / f"ind.{dataset}.{part}" for part in PARTS}
    _dense(paths["x"], parts["x"], "feature")  # checked only: allx holds the same rows
    allx = _dense(paths["allx"], parts["allx"], "feature")
    tx = _dense(paths["tx"], parts["tx"], "feature")
    y = _dense(paths["y"], parts["y"], "label")
    ally = _dense(paths["ally"], parts["ally"], "label")
    ty = _dense(paths["ty"], parts["ty"], "label")
    check_class_count(paths["ally"], ally.shape[1], f"a one-hot matrix of {ally.shape[1]:,} columns")
    graph = parts["graph"]
    if not isinstance(graph, dict):
        raise DatasetError(f"{paths['graph']}: expected a dict of adjacency lists, found {type(graph).__name__}")
    if tx.shape[0] != test_index.shape[0] or ty.shape[0] != test_index.shape[0]:
        raise DatasetError(
            f"{paths['tx']}: expected {test_index.shape[0]} rows (one per test.index line), found {tx.shape[0]}"
        )
    if allx.shape[0] != ally.shape[0] or allx.shape[1] != tx.shape[1] or ally.shape[1] != ty.shape[1]:
        raise DatasetError(
            f"{paths['allx']}: expected allx/ally/tx/ty of matching shapes, found "
            f"{allx.shape}, {ally.shape}, {tx.shape}, {ty.shape}"
        )

    # The test block spans min(test.index)..max(test.index); CiteSeer leaves holes in that range.
    sorted_test = np.sort(test_index)
    low = int(sorted_test[0]) if sorted_test.size else allx.shape[0]
    high = int(sorted_test[-1]) if sorted_test.size else allx.shape[0] - 1
    if low != allx.shape[0]:
        raise DatasetError(
            f"{test_path}: expected the smallest test node id to follow allx ({allx.shape[0]}), found {low}"
        )
    span = high - low + 1
    resources.require_memory(
        2 * (allx.shape[0] + span) * (tx.shape[1] * 4 + ty.shape[1] * ty.dtype.itemsize),
        f"{test_path}: test node ids up to {high:,} (features and labels of {allx.shape[0] + span:,} nodes)",
    )
    tx_full = np.zeros((span, tx.shape[1]), dtype=np.float32)
    ty_full = np.zeros((span, ty.shape[1]), dtype=ty.dtype)
    tx_full[sorted_test - low] = tx
    ty_full[sorted_test - low] = ty
    features = np.concatenate([allx.astype(np.float32), tx_full]).astype(np.float32)
    onehot = np.concatenate([ally, ty_full])
    # tx/ty rows are stored in test.index order, the graph numbers test nodes by their index.
    features[test_index] = features[sorted_test]
    onehot[test_index] = onehot[sorted_test]
    guard = NonFiniteGuard(paths["allx"], options.non_finite)
    features = guard.apply(features, 0)
    num_nodes = features.shape[0]
    labels = np.where(onehot.sum(axis=1) > 0, onehot.argmax(axis=1), -1).astype(np.int64)
    num_classes = int(onehot.shape[1])

    src, dst = graph_edges(paths["graph"], graph, num_nodes)
    built = edges.build_csc(
        edges.array_edge_chunks(src, dst),
        num_nodes,
        undirected=True,
        drop_self_loops=True,
        progress=progress,
        num_input_edges=int(src.shape[0]),
    )
    indptr, indices = built.indptr, built.indices

    train_idx = np.arange(y.shape[0], dtype=np.int64)
    valid_idx = np.arange(y.shape[0], y.shape[0] + VALID_SIZE, dtype=np.int64)
    if y.shape[0] + VALID_SIZE > num_nodes:
        raise OptionError(f"{paths['y']}: expected {y.shape[0]} + {VALID_SIZE} <= {num_nodes} nodes")
    with DatasetWriter(output, overwrite=overwrite) as writer:
        note_replaced(writer, guard)
        writer.save("indptr", indptr)
        writer.save("indices", indices)
        writer.save("features", features)
        writer.save("labels", labels)
        splits.save_splits(writer, (train_idx, valid_idx, sorted_test))
        meta = finish.dataset_meta(
            name=name or finish.default_name(output),
            num_nodes=num_nodes,
            num_edges=int(indices.shape[0]),
            directed=False,
            feature_dim=int(features.shape[1]),
            feature_dtype="float32",
            num_classes=num_classes,
            importer="planetoid",
            inputs=[paths[p] for p in PARTS] + [test_path],
            options={"dataset": dataset, **options.to_meta(PLANETOID_FIELDS)},
            edge_counts=built.counts,
        )
        return finish.finish_dataset(writer, meta, options, progress=progress)
