"""PyG ``GraphStore`` over the dataset's CSC topology (read-only)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import EdgeAttr, GraphStore
from torch_geometric.data.graph_store import EdgeLayout

from graphtier.dataset import Dataset
from graphtier.graphstore import GraphStore as GraphtierStore
from graphtier.pyg.feature_store import _ReadOnlyStoreError


class GraphtierGraphStore(GraphStore):
    """A read-only PyG ``GraphStore`` exposing the CSC topology (``layout='csc'``) of a graphtier
    :class:`graphtier.graphstore.GraphStore` (a Dataset is opened as a CPU one); a typed dataset's relations are
    PyG edge types ``(src, name, dst)`` with local ids of their types."""

    def __init__(self, source: Dataset | GraphtierStore) -> None:
        super().__init__()
        self.store = source if isinstance(source, GraphtierStore) else GraphtierStore(source, None)
        self.dataset = self.store.dataset
        n = self.store.num_nodes
        schema = self.dataset.schema
        if self.store.is_hetero:  # one edge type per relation, PyG's (src, name, dst)
            self._attrs = [
                EdgeAttr(
                    rel.type, EdgeLayout.CSC, True, (schema.node_type(rel.src).count, schema.node_type(rel.dst).count)
                )
                for rel in schema.relations
            ]
        else:
            self._attrs = [EdgeAttr(edge_type=None, layout=EdgeLayout.CSC, is_sorted=True, size=(n, n))]

    def _put_edge_index(self, edge_index: Any, edge_attr: EdgeAttr) -> bool:
        raise _ReadOnlyStoreError("GraphtierGraphStore is read-only")

    def _remove_edge_index(self, edge_attr: EdgeAttr) -> bool:
        raise _ReadOnlyStoreError("GraphtierGraphStore is read-only")

    def _get_edge_index(self, edge_attr: EdgeAttr) -> tuple[Tensor, Tensor] | None:
        if edge_attr.layout != EdgeLayout.CSC:
            return None
        if self.store.is_hetero:  # the relation's CSC in local ids of its types
            rel = self.dataset.schema.relation(tuple(edge_attr.edge_type))
            indptr, indices = self.dataset.relation_csc(rel)
            rows = torch.from_numpy(
                np.asarray(indices).astype(np.int64) - self.dataset.schema.node_type(rel.src).offset
            )
            return rows, torch.from_numpy(np.asarray(indptr, dtype=np.int64) - int(indptr[0]))
        indptr, indices = self.store.csc
        rows = torch.from_numpy(np.asarray(indices).astype(np.int64))
        colptr = torch.from_numpy(np.asarray(indptr, dtype=np.int64).copy())
        return rows, colptr

    def get_all_edge_attrs(self) -> list[EdgeAttr]:
        return list(self._attrs)
