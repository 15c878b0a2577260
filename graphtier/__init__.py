"""graphtier: train GNNs on graphs whose features and topology do not fit in GPU memory."""

from graphtier.dataset import Dataset, DatasetWriter
from graphtier.errors import DatasetError, GraphtierError, OptionError

__version__ = "0.1.0"

__all__ = ["Dataset", "DatasetError", "DatasetWriter", "GraphtierError", "OptionError", "__version__"]
