"""The feature stores: the :class:`~.source.FeatureSource` interface and its bytes per tier, the host store
(:mod:`.host`), the tiered store over GPU, peer GPUs, zero-copy host memory and disk (:mod:`.tiered`), the row
cache in front of either (:mod:`.cache`, :mod:`.cached`), the ``--features-on`` modes (:mod:`.modes`) and
:class:`~.spec.PlacementSpec`; the host memory they gather into or read from (:mod:`.arena`, :mod:`.unified`,
:mod:`.threads`) and their numba and Triton gather kernels. Imports :mod:`graphtier.memory.plan` only."""
