"""Neighbour sampling where the topology is (a GPU): :class:`~graphtier.sampling.device.sampler.DeviceNeighborSampler`
(any schema) with its typed strategy ``DeviceTypedHops``, the parts every device sampler is made of (the
``Topology`` it reads, seeds on its device, first-seen relabels, random picks) and the Triton pick kernels (loaded on
first use). Imports :mod:`graphtier.sampling.neighbor` (its random streams and checks) and the base modules."""
