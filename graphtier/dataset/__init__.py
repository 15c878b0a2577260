"""Datasets: the on-disk format, atomic writers, importers and the synthetic generator."""

from graphtier.dataset.format import FORMAT_VERSION, Dataset, index_dtype
from graphtier.dataset.writer import DatasetWriter

__all__ = ["FORMAT_VERSION", "Dataset", "DatasetWriter", "index_dtype"]
