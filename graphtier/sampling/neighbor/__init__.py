"""Neighbour sampling on the CPU: :class:`~graphtier.sampling.neighbor.sampler.NeighborSampler` (any schema) with
its typed strategy ``TypedHops``, the parts every CPU sampler's hops are made of (:mod:`.hops`), the numba kernels
and their counter-based random numbers (which every other sampler draws too), and the plain-Python reference
samplers the tests compare against. The lowest sampling sub-package: imports only the base modules of
:mod:`graphtier.sampling`."""
