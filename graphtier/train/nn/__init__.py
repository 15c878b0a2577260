"""The networks: homogeneous and typed layers and models, their CSR aggregation and dropout kernels, the link
model, learnable (tiered) embedding tables and the one builder of a run's model (:mod:`.run_model`).
Imports :mod:`graphtier.train.options` only."""
