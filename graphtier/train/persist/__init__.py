"""What a run writes and reads back: saved models, checkpoints, dataset fingerprints, safe torch files.
Imports :mod:`graphtier.train.options` and :mod:`graphtier.train.nn`."""
