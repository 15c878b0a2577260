"""The graph's topology in tiers: :class:`~.topology.TieredTopology` spreads the CSC ``indices`` over GPU memory,
host memory and disk like the features (a typed graph's GPU tier as several ranges, :mod:`.position_ranges`),
read on CUDA by a Triton kernel (:mod:`._topology_kernels`). The top of :mod:`graphtier.memory`: imports
:mod:`~graphtier.memory.plan` and :mod:`~graphtier.memory.features`, neither imports it."""
