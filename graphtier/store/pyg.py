"""A PyG ``FeatureStore`` whose ``x`` rows come from a graphtier feature store (tiered, zero-copy, ...).

It is :class:`graphtier.pyg.GraphtierFeatureStore` (labels, sizes, read-only behaviour) with the
feature gather replaced::

    from graphtier.store import make_feature_store
    from graphtier.store.pyg import TieredPyGFeatureStore

    store = make_feature_store(ds.features, "tiered", device=torch.device("cuda"), gpu_budget="auto")
    stores = (TieredPyGFeatureStore(ds, store), GraphtierGraphStore(ds))

``x`` is returned as float32 on the store's ``output_device`` (the GPU for the tiered modes on CUDA).
"""

from __future__ import annotations

from graphtier.dataset import Dataset
from graphtier.errors import OptionError
from graphtier.pyg import GraphtierFeatureStore
from graphtier.store.factory import FeatureStore


class TieredPyGFeatureStore(GraphtierFeatureStore):
    """PyG ``FeatureStore`` over ``dataset`` with ``x`` gathered by ``store`` (any graphtier feature store).

    ``x[index]``: float32 [len(index), D] on ``store.output_device``; ``y``: int64 labels on the CPU.
    """

    def __init__(self, dataset: Dataset, store: FeatureStore) -> None:
        if dataset.features is None:
            raise OptionError(f"{dataset.path}: dataset has no features to serve")
        if store.num_rows != dataset.num_nodes or store.dim != dataset.feature_dim:
            raise OptionError(
                f"feature store shape: expected [{dataset.num_nodes}, {dataset.feature_dim}] (the dataset), "
                f"found [{store.num_rows}, {store.dim}]"
            )
        super().__init__(dataset)
        # the parent's x path calls self._gather.gather(ids) and converts to float32: same contract
        self._gather = store  # type: ignore[assignment]
