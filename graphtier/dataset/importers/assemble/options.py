"""The options every importer shares, as one typed value: :class:`ImportOptions`.

The CLI builds it once from the shared click options (``graphtier/cli/prepare_options.py``), and it is
passed unchanged to every importer and to :func:`~graphtier.dataset.importers.assemble.finish.finish_edge_import`.
It validates itself in one place (:meth:`ImportOptions.__post_init__`; the checks that need the input,
such as files existing or labels inside the source, in :meth:`ImportOptions.check_inputs`) and writes its
``meta.json`` ``source.options`` entries from one place (:meth:`ImportOptions.to_meta`). Errors name the
options as the caller spelled them (``synthetic_features=`` in Python, ``--synthetic-features`` on the CLI).

Each format accepts a subset (:data:`EDGE_FORMAT_FIELDS`, :data:`OGB_FIELDS`, :data:`PLANETOID_FIELDS`):
a value given for an option the format does not take is an error, not silently ignored.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from graphtier.dataset.edges.link_split import SPLIT_BY
from graphtier.dataset.finite import NON_FINITE_MODES
from graphtier.dataset.importers.common.labels import MAX_CLASSES
from graphtier.dataset.importers.common.members import file_or_member
from graphtier.dataset.importers.common.node_data import LABEL_LAYOUTS
from graphtier.dataset.importers.common.textio import require_file
from graphtier.dataset.importers.split.holdout import check_eval_negatives, parse_edge_split
from graphtier.dataset.importers.split.pair_files import EdgeSplitFiles
from graphtier.dataset.importers.split.splits import check_fractions, parse_fractions
from graphtier.errors import OptionError

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class ImportOptions:
    """The options shared by the importers (one field per shared ``graphtier prepare`` option).

    Graph: ``undirected`` (add missing reverse edges), ``drop_self_loops``, ``keep_duplicates``.
    Node-data files: ``labels``, ``features`` (paths), ``labels_layout`` (``auto``/``pairs``/``lines``),
    ``labels_column`` (0-based column of a 2-d labels array), ``unlabelled_value`` (class id meaning none).
    Synthetic node data: ``synthetic_features`` D (noise features, label signal ``synthetic_feature_signal``),
    ``synthetic_labels`` K (random labels). ``split``: ``(train, valid, test)`` fractions (or their text
    ``"0.6,0.2,0.2"``), ``seed`` of the split and the synthetic data. ``non_finite``: ``error`` or ``replace``
    NaN/Inf feature values. Link prediction: ``edge_split`` ``(train, valid, test)`` edge fractions summing to 1
    (or ``"0.85,0.05,0.1"``; :mod:`~graphtier.dataset.importers.split.holdout`), ``eval_negatives`` K (0: negative
    pairs, K > 0: K negative destinations per evaluation positive), seeded by ``seed``. ``edge_split_files``: the edge split as files instead
    (:class:`EdgeSplitFiles`, or its text ``"train=FILE,valid=FILE,test=FILE"``). ``split_relation``: on a typed
    graph, the relation ``"SRC,REL,DST"`` (or ``"REL"``) whose edges ``edge_split`` splits
    (:mod:`~graphtier.dataset.importers.split.typed_holdout`). ``split_by``: ``random`` (held-out edges leave the graph)
    or ``time`` (the earliest edges train, the latest test; they stay in the graph and every pair gets its time:
    :mod:`~graphtier.dataset.importers.split.time_holdout`; needs edge times, ``prepare edgelist`` ``time_column``).
    """

    undirected: bool = False
    drop_self_loops: bool = False
    keep_duplicates: bool = False
    labels: Path | None = None
    features: Path | None = None
    labels_layout: str = "auto"
    labels_column: int | None = None
    unlabelled_value: int | None = None
    synthetic_features: int = 0
    synthetic_feature_signal: float = 0.0
    synthetic_labels: int = 0
    split: tuple[float, float, float] | None = None
    seed: int = 0
    non_finite: str = "error"
    edge_split: tuple[float, float, float] | None = None
    edge_split_files: EdgeSplitFiles | None = None
    eval_negatives: int = 0
    split_relation: str | None = None
    split_by: str = "random"

    def __post_init__(self) -> None:
        """Normalise (paths, split text) and reject malformed or conflicting values."""
        for path_field in ("labels", "features"):
            value = getattr(self, path_field)
            if value is not None:  # PATH:KEY is a member of an .npz or .mat (members.file_or_member)
                object.__setattr__(self, path_field, file_or_member(value))
        if isinstance(self.split, str):
            object.__setattr__(self, "split", parse_fractions(self.split))
        elif self.split is not None:
            object.__setattr__(self, "split", tuple(float(f) for f in self.split))
            check_fractions(self.split)
        if self.edge_split_files is not None:
            object.__setattr__(self, "edge_split_files", EdgeSplitFiles.of(self.edge_split_files))
        object.__setattr__(self, "edge_split", parse_edge_split(self.edge_split))
        object.__setattr__(self, "eval_negatives", check_eval_negatives(self.eval_negatives))
        self._check_values()

    def _check_values(self) -> None:
        if self.features is not None and self.synthetic_features:
            raise OptionError(
                "{features} and {synthetic_features}: expected at most one, found both",
                options=("features", "synthetic_features"),
            )
        if self.synthetic_features < 0:
            raise OptionError.invalid("synthetic_features", "a positive dimension", self.synthetic_features)
        signal = self.synthetic_feature_signal
        if not np.isfinite(signal) or signal < 0:
            raise OptionError.invalid("synthetic_feature_signal", "a finite number >= 0", signal)
        if signal > 0 and not self.synthetic_features:
            raise OptionError(
                "{synthetic_feature_signal}: expected {synthetic_features} as well, found none",
                options=("synthetic_feature_signal", "synthetic_features"),
            )
        if self.labels is not None and self.synthetic_labels:
            raise OptionError(
                "{labels} and {synthetic_labels}: expected at most one, found both",
                options=("labels", "synthetic_labels"),
            )
        if self.synthetic_labels < 0 or self.synthetic_labels == 1:
            raise OptionError.invalid("synthetic_labels", "at least 2 classes", self.synthetic_labels)
        if self.synthetic_labels > MAX_CLASSES:  # before the graph is built, not when the labels are written
            raise OptionError.invalid(
                "synthetic_labels", f"at most {MAX_CLASSES:,} (2^24) classes", f"{self.synthetic_labels:,}", show=False
            )
        if self.labels_layout not in LABEL_LAYOUTS:
            raise OptionError.invalid("labels_layout", f"one of {', '.join(LABEL_LAYOUTS)}", self.labels_layout)
        if self.edge_split is not None and self.edge_split_files is not None:
            raise OptionError(
                "{edge_split} and {edge_split_files}: expected at most one, found both",
                options=("edge_split", "edge_split_files"),
            )
        if self.split_relation is not None and self.edge_split is None:
            raise OptionError(
                "{split_relation}: expected {edge_split} as well (the fractions of the relation's edges), found none",
                options=("split_relation", "edge_split"),
            )
        if self.split_by not in SPLIT_BY:
            raise OptionError.invalid("split_by", f"one of {', '.join(SPLIT_BY)}", self.split_by)
        if self.split_by == "time" and self.edge_split is None:
            raise OptionError(
                "{split_by=time}: expected {edge_split} as well (the fractions of the time-ordered edges), found none",
                options=("split_by", "edge_split"),
            )
        if self.non_finite not in NON_FINITE_MODES:
            raise OptionError.invalid("non_finite", f"one of {', '.join(NON_FINITE_MODES)}", self.non_finite)

    def check_inputs(
        self,
        *,
        labels_in_source: bool = False,
        label_sources: tuple[str, ...] = ("labels",),
        link_split_in_source: bool = False,
    ) -> None:
        """The checks that need the input: the ``labels``/``features`` files exist, and a feature signal or a
        ``labels_column``/``unlabelled_value`` has labels to apply to (``labels_in_source``: the input itself
        carries labels, as a ``.mat`` variable or OGB's ``node-label``; ``label_sources``: the options
        that give labels, named when none did); ``eval_negatives`` has an edge split to draw negatives for
        (``edge_split``, ``edge_split_files``, or ``link_split_in_source``: OGB's link split files); the
        ``edge_split_files`` exist."""
        if (
            self.eval_negatives
            and self.edge_split is None
            and self.edge_split_files is None
            and not link_split_in_source
        ):
            raise OptionError(
                "{eval_negatives}: expected an edge split ({edge_split} or {edge_split_files}) to draw negatives "
                "for, found none",
                options=("eval_negatives", "edge_split", "edge_split_files"),
            )
        if self.edge_split_files is not None:
            self.edge_split_files.check_exist()
        has_labels = self.labels is not None or labels_in_source
        if self.synthetic_feature_signal > 0 and not has_labels and not self.synthetic_labels:
            raise OptionError(
                "{synthetic_feature_signal}: expected labels ({labels} or {synthetic_labels}) to encode, found none",
                options=("synthetic_feature_signal", "labels", "synthetic_labels"),
            )
        for option in ("labels_column", "unlabelled_value"):
            if getattr(self, option) is not None and not has_labels:
                where = " or ".join(f"{{{name}}}" for name in label_sources)
                raise OptionError(
                    f"{{{option}}}: expected labels to apply it to ({where}), found none",
                    options=(option, *label_sources),
                )
        if self.labels is not None:
            require_file(self.labels, "--labels file")
        if self.features is not None:
            require_file(self.features, "--features file")

    def check_accepted(self, accepted: Iterable[str], importer: str) -> None:
        """Refuse a non-default value for an option the ``importer`` does not take (it would be ignored)."""
        accepted = set(accepted)
        for field in fields(self):
            if field.name not in accepted and getattr(self, field.name) != field.default:
                raise OptionError(
                    f"{{{field.name}}}: expected no value for the {importer} importer (it does not use it), "
                    f"found {getattr(self, field.name)!r}",
                    options=(field.name,),
                )

    def to_meta(self, accepted: Iterable[str] | None = None) -> dict[str, Any]:
        """The ``meta.json`` ``source.options`` entries (paths as text, the split as a list), for the
        ``accepted`` fields of one format (default: all)."""
        names = [f.name for f in fields(self)] if accepted is None else list(accepted)
        meta: dict[str, Any] = {}
        for name in names:
            value = getattr(self, name)
            if isinstance(value, Path):
                value = str(value)
            elif isinstance(value, EdgeSplitFiles):
                value = value.to_meta()
            elif isinstance(value, tuple):
                value = list(value)
            meta[name] = value
        return meta

    @classmethod
    def of(cls, options: ImportOptions | None, overrides: dict[str, Any]) -> ImportOptions:
        """``options`` (default: all defaults) with the keyword ``overrides`` of a Python caller applied."""
        base = options if options is not None else cls()
        unknown = sorted(set(overrides) - {f.name for f in fields(cls)})
        if unknown:
            raise TypeError(f"unexpected keyword argument(s) {', '.join(unknown)}; ImportOptions has no such field")
        return dataclasses.replace(base, **overrides) if overrides else base


GRAPH_FIELDS = ("undirected", "drop_self_loops", "keep_duplicates")
"""Edge handling (every format but Planetoid, whose public form is fixed)."""
NODE_FILE_FIELDS = ("labels", "features", "labels_layout", "labels_column", "unlabelled_value")
"""Labels and features from files."""
SYNTHETIC_FIELDS = ("synthetic_features", "synthetic_feature_signal", "synthetic_labels", "split", "seed")
"""Generated node data and the random split."""
LINK_FIELDS = ("edge_split", "edge_split_files", "eval_negatives")
"""The edge split of link prediction (every format; seeded by ``seed``)."""
EDGE_FORMAT_FIELDS = GRAPH_FIELDS + NODE_FILE_FIELDS + SYNTHETIC_FIELDS + ("non_finite",) + LINK_FIELDS
"""What ``edgelist``, ``csr-npz`` and ``mat`` accept: every field but the typed ``split_relation`` (and
``split_by``: only an edge list has edge times; a ``split_by="time"`` there finds none)."""
EDGELIST_FIELDS = EDGE_FORMAT_FIELDS + ("split_by",)
"""What ``edgelist`` accepts: an edge list may have edge times (``time_column``) to split by."""
OGB_FIELDS = GRAPH_FIELDS + SYNTHETIC_FIELDS + ("non_finite",) + LINK_FIELDS
PLANETOID_FIELDS = ("non_finite",) + LINK_FIELDS + ("seed",)
MOVIELENS_FIELDS = ("eval_negatives", "seed", "edge_split", "split_by")
MANIFEST_FIELDS = ("non_finite", "edge_split", "split_relation", "eval_negatives", "seed", "split_by")
"""MovieLens: its fold is the edge split (or, with ``split_by="time"``, ``edge_split`` of its ratings by time); the
negatives and the seed of the validation draw."""
