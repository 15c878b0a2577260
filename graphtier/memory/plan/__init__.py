"""Where a table's rows go, decided before any byte moves: budgets and tier boundaries (:mod:`.placement`), one
GPU budget split across the tables of a typed dataset (:mod:`.typed_budget`), and the multi-GPU placement solver
(:mod:`.placement_solver`) over a machine's GPU interconnect (:mod:`.gpu_topology`, with the shipped link matrices
in ``topologies/``). Imports nothing else of :mod:`graphtier.memory`."""
