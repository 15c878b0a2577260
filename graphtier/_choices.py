"""The names and defaults of options that the library and the command line both spell.

The library's modules import them from here, and so do the commands, whose ``--help`` then shows them without
importing torch (this module imports nothing). One definition each: a new score, task or default is added here.
"""

from __future__ import annotations

TASK_NAMES = ("node", "link")
"""What a run trains (``--task``): node classification (seeds: node ids) or link prediction (seeds: rows of the
edge split's training pairs); the trainer and the tiering tools take the same names."""

LINK_TARGETS = ("regression", "binary")
"""Edge-level targets of ``--task link`` (``--link-target``): predict each labelled pair's value
(``link_{split}_label.npy``; MSE, RMSE/MAE) or whether it exceeds ``--link-threshold`` (BCE, AUC/AP); no negatives."""

NEGATIVE_SAMPLING = ("uniform", "degree")
"""How training negatives' destinations are drawn (``--negative-sampling``)."""
DEFAULT_NEGATIVE_SAMPLING = "uniform"
DEFAULT_NUM_NEGATIVES = 1
"""Negatives drawn per training positive (``--num-negatives``), as DGL's ``negative_sampler.Uniform(1)``."""

TEMPORAL_STRATEGIES = ("uniform", "recent")
"""How a temporal hop picks among the edges before its bound (``--temporal``): uniformly without replacement, or
the most recent ones (TGAT/TGN style)."""

SCORE_METHODS = ("degree", "rpr", "wrpr", "fwr", "fwr-sum", "presample")
"""Every hotness score name; ``fwr`` (fanout-weighted reads, per-batch dedup) is the default of score/reorder."""
DEFAULT_SCORE = "fwr"

DEFAULT_BUDGETS: tuple[str, ...] = ("0%", "1%", "5%", "10%", "25%", "50%", "100%")
"""The GPU budgets ``graphtier plan`` compares when none are given."""
DEFAULT_PCIE_GBPS = 25.0
DEFAULT_GPU_GBPS = 1500.0
DEFAULT_DISK_GBPS = 3.0
PAIR_MOVE_GROUPS = 16
"""Row groups up to which the placement solver also tries two-group moves; ``plan``'s default group count."""

GATHER_DTYPES = ("float32", "float16")
"""The table dtypes ``graphtier bench gather`` measures (``--dtype``)."""
