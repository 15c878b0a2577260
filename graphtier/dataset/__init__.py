"""Datasets: the on-disk format, atomic writers, importers, the synthetic generator and the EdgeBank baseline."""

from graphtier.dataset.edges.edgebank import edgebank_scores
from graphtier.dataset.format import FORMAT_VERSION, Dataset, index_dtype
from graphtier.dataset.writer import DatasetWriter

__all__ = ["FORMAT_VERSION", "Dataset", "DatasetWriter", "edgebank_scores", "index_dtype"]
