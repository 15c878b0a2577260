"""Time-bounded sampling: :class:`~graphtier.sampling.temporal.sampler.TemporalNeighborSampler` on the CPU and
:class:`~graphtier.sampling.temporal.temporal_device.DeviceTemporalSampler` on the topology's device (any schema),
their typed strategies ``TypedTemporalHops`` and ``DeviceTypedTemporalHops``, the temporal cut kernels (numba and
Triton) and the kernels of a temporal batch's input rows. Imports :mod:`graphtier.sampling.neighbor`,
:mod:`graphtier.sampling.device` and the base modules."""
