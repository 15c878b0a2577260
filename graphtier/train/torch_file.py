"""Reading and writing the torch files of graphtier (checkpoints, saved models) safely: the primitives live in
:mod:`graphtier.dataset.torch_file` (input files of the dataset layer are torch files too) and are re-exported here.
"""

from graphtier.dataset.torch_file import load_torch_file, save_torch_file, verify_archive

__all__ = ["load_torch_file", "save_torch_file", "verify_archive"]
