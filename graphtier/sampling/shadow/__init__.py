"""ShaDow k-hop subgraphs: :class:`~graphtier.sampling.shadow.sampler.ShadowSampler` and its numba kernels. Imports
:mod:`graphtier.sampling.neighbor` and the base modules."""
