"""Capacity planning: how much of a dataset's features, topology and edge features each tier (GPU, RAM, disk) should
hold for a budget, from the replayed reads (``capacity``), per type (``typed``), per edge table (``edges``), for
the topology (``topology``), over a GPU machine's links (``placement``), with the recommendation and report
(``recommendation``, ``report``)."""
