"""PyG integration: graphtier's sampler and dataset behind PyG's own loader interfaces.

A PyG user gets neighbour sampling without pyg-lib or torch-sparse::

    from torch_geometric.loader import NodeLoader
    from graphtier import Dataset
    from graphtier.pyg import GraphtierFeatureStore, GraphtierGraphStore, GraphtierNeighborSampler

    ds = Dataset.open("data/cora")
    stores = (GraphtierFeatureStore(ds), GraphtierGraphStore(ds))
    loader = NodeLoader(stores, GraphtierNeighborSampler(ds, [10, 10]),
                        input_nodes=torch.from_numpy(ds.train_idx[:]), batch_size=128, shuffle=True)
    for batch in loader:            # a torch_geometric.data.Data
        out = model(batch.x, batch.edge_index)[: batch.batch_size]
        loss = F.cross_entropy(out, batch.y[: batch.batch_size])

The batch follows PyG's ``NeighborLoader`` layout: ``batch.n_id`` global ids with the seeds first,
``edge_index`` over local ids (row 0 source, row 1 destination), all hops merged, and
``num_sampled_nodes`` / ``num_sampled_edges`` per hop (seeds first) for ``trim_to_layer``; on a dataset with edge
features ``batch.e_id`` (the edges' dataset ids), and ``transform=EdgeAttrs(feature_store)`` adds ``edge_attr``.
``neighbor_loader`` builds all of this in one call. ``LinkNeighborLoader(stores, neighbor_sampler=
GraphtierNeighborSampler(ds, fanouts), edge_label_index=(None, pairs), neg_sampling="binary")`` samples link
batches with graphtier's link sampler (negatives drawn per positive, the batch's target edges excluded).

Layout follows PyG's own split: ``feature_store`` (PyG ``FeatureStore`` over the dataset, or over any
graphtier feature store: tiered, zero-copy, cached), ``graph_store`` (``GraphStore`` over the CSC),
``sampler`` (``BaseSampler``) and ``loader`` (``NodeLoader`` in one call).
"""

from graphtier.pyg.feature_store import EdgeAttrs, GraphtierFeatureStore, TieredPyGFeatureStore
from graphtier.pyg.graph_store import GraphtierGraphStore
from graphtier.pyg.loader import neighbor_loader
from graphtier.pyg.sampler import GraphtierNeighborSampler

__all__ = [
    "EdgeAttrs",
    "GraphtierFeatureStore",
    "GraphtierGraphStore",
    "GraphtierNeighborSampler",
    "TieredPyGFeatureStore",
    "neighbor_loader",
]
