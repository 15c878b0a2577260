"""The training loop: the producer pipeline and device feed, tasks and their metrics, the evaluation, the
one-process and rank-group epoch steps, the trainer, the run report, the public loader, and the launcher of
ranks. The top of :mod:`graphtier.train`: imports every other sub-package, none imports it."""
