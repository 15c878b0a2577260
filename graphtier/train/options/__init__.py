"""The training options: one frozen spec per concern (:mod:`.spec`), composed and checked against a dataset by
:class:`~graphtier.train.options.config.TrainConfig`; imports nothing else of :mod:`graphtier.train`."""
