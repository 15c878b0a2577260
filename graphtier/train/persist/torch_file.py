"""Reading and writing the torch files of graphtier (checkpoints, saved models) safely: the primitives live in
:mod:`graphtier.dataset.torch_file` (input files of the dataset layer are torch files too) and are re-exported here.
"""

from __future__ import annotations

import os
from pathlib import Path

from graphtier.dataset.torch_file import load_torch_file, save_torch_file, verify_archive
from graphtier.errors import OptionError

__all__ = ["load_torch_file", "model_file", "save_torch_file", "verify_archive"]


def model_file(path: str | os.PathLike[str]) -> Path:
    """``path`` of a saved model (``--model``) as a Path; :class:`OptionError` (one line) unless it is a file.

    Here rather than in :mod:`graphtier.train.persist.saved` (which imports the models and PyG), so that ``graphtier predict``
    names a missing file before loading them.
    """
    source = Path(path)
    if not source.is_file():
        raise OptionError(f"--model {source}: file not found")
    return source
