"""Link sampling: :class:`~graphtier.sampling.link.sampler.LinkSampler` (pairs, any schema) with its typed strategy
``TypedPairs``, the pair table with its negatives and times (:mod:`.pairs`), and the kernels that drop the target
edges. Imports :mod:`graphtier.sampling.neighbor` and the base modules."""
