"""Measured feature-access analysis (Data Tiering, Fig. 7 and Fig. 9).

Replays the real training sampler over the training nodes, counts every feature row each
mini-batch reads (every entry of ``MiniBatch.n_id``), and reports for each hotness score the share
of all reads that fall into the top x% of nodes by that score: the hit ratio a hot tier holding
those nodes would get. The ranking by the measured counts themselves (``ideal``) is the upper bound.

A typed dataset replays the typed sampler (:mod:`graphtier.tiering.typed_reads`); its curves are over every
node of every type (in total) and, in ``curves_by_type``, over each type's own nodes (each type has its own
table and its own hot tier).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from graphtier._checks import check_int
from graphtier._choices import SCORE_METHODS
from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.format import Dataset
from graphtier.errors import OptionError
from graphtier.graph.reorder import order_by_score
from graphtier.sampling.neighbor.sampler import format_fanouts
from graphtier.tiering.hotness import compute_scores
from graphtier.tiering.plotting import fit_title, load_pyplot
from graphtier.tiering.replay import DEFAULT_REPLAY, Replay, replay_reads
from graphtier.tiering.seeds import training_seeds

HIT_PERCENTS = (1, 2, 5, 10, 20, 25, 50)
PLOT_POINTS = 1000
INTERPRETED_PERCENT = 10
"""The hot-tier size :func:`interpret_access` judges: the top 10% of nodes."""
MIN_USEFUL_LIFT = 1.5
"""A hot tier helps when its nodes serve at least 1.5x their uniform share of reads (15% of the reads for 10% of
the nodes): below that, holding the top 10% saves little more PCIe traffic than holding any 10% of the rows."""
MOST_NODES_READ = 0.9
"""A replay that reads at least 90% of the nodes reads ~all of them: the batch size, not the graph, flattens reads."""


def top_size(num_nodes: int, percent: float) -> int:
    """How many nodes a tier of ``percent`` % of ``num_nodes`` holds (rounded down, at least 1 when N > 0)."""
    if num_nodes == 0:
        return 0
    return max(1, min(num_nodes, int(num_nodes * percent // 100)))


def hit_ratio_curve(
    scores: np.ndarray, counts: np.ndarray, percents: Sequence[float] = HIT_PERCENTS
) -> dict[str, float]:
    """Share of all reads in the top x% of nodes by ``scores``, for each x in ``percents``.

    ``scores``: float/int [N] (higher = hotter, ties by node id); ``counts``: int64 [N] measured reads.
    Returns ``{str(x): share in [0, 1]}`` (0 for every x when there are no reads).
    """
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    cumulative = np.cumsum(counts[order_by_score(scores)])
    curve: dict[str, float] = {}
    for percent in percents:
        k = top_size(counts.shape[0], percent)
        curve[_percent_key(percent)] = float(cumulative[k - 1] / total) if total and k else 0.0
    return curve


def cumulative_share(
    scores: np.ndarray, counts: np.ndarray, points: int = PLOT_POINTS
) -> tuple[np.ndarray, np.ndarray]:
    """(float64 [P] % of nodes, float64 [P] cumulative share of reads) along the ranking by ``scores``.

    Starts at (0, 0) and ends at (100, 1); ``P <= points + 1``.
    """
    counts = np.asarray(counts, dtype=np.int64)
    num_nodes = counts.shape[0]
    total = max(1, int(counts.sum()))
    cumulative = np.concatenate([[0], np.cumsum(counts[order_by_score(scores)])])
    positions = np.unique(np.linspace(0, num_nodes, points + 1).round().astype(np.int64))
    return positions * 100.0 / max(1, num_nodes), cumulative[positions] / total


def _percent_key(percent: float) -> str:
    return str(int(percent)) if float(percent).is_integer() else str(percent)


@dataclass
class AccessAnalysis:
    """Result of :func:`analyze_access`.

    ``counts``: int64 [N] measured reads of the replay; ``scores``: float64 [N] per method;
    ``curves``: per method and ``ideal``, ``{x: share}``; ``seconds``: wall time per stage.
    ``curves_by_type``: a typed dataset's curves per node type (``{type: {method: {x: share}}}``, each over that
    type's nodes), with ``reads_by_type`` its measured reads; empty for a homogeneous dataset.
    """

    counts: np.ndarray
    scores: dict[str, np.ndarray]
    curves: dict[str, dict[str, float]]
    config: dict[str, Any]
    seconds: dict[str, float] = field(default_factory=dict)
    curves_by_type: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    reads_by_type: dict[str, int] = field(default_factory=dict)

    @property
    def total_reads(self) -> int:
        return int(self.counts.sum())

    def to_json(self) -> dict[str, Any]:
        """The JSON document written by ``graphtier analyze --json``."""
        return {
            "curves": self.curves,
            "interpretation": interpret_access(self),
            "total_reads": self.total_reads,
            "num_nodes": int(self.counts.shape[0]),
            "nodes_read": int(np.count_nonzero(self.counts)),
            "config": self.config,
            "seconds": {k: round(v, 4) for k, v in self.seconds.items()},
            **(
                {"curves_by_type": self.curves_by_type, "reads_by_type": self.reads_by_type}
                if self.curves_by_type
                else {}
            ),
        }


def interpret_access(analysis: AccessAnalysis, percent: float = INTERPRETED_PERCENT) -> str:
    """One line saying whether a hot tier of the top ``percent`` % of nodes would help, judged by the best score.

    The best score (``ideal`` only when no score was measured) is the one whose top ``percent`` % serves the largest
    share of the replay's reads; its lift is that share over the uniform share (``percent`` %). Below
    :data:`MIN_USEFUL_LIFT` the line says a hot tier will not help, and why when the replay read ~all nodes
    (:data:`MOST_NODES_READ`); else it names the best score and its lift.
    """
    key = _percent_key(percent)
    num_nodes = int(analysis.counts.shape[0])
    if analysis.total_reads == 0 or num_nodes == 0:
        return "no feature reads were replayed: nothing to tier"
    rankings = {name: curve[key] for name, curve in analysis.curves.items() if name != "ideal"}
    rankings = rankings or {"ideal": analysis.curves["ideal"][key]}
    best = max(rankings, key=lambda name: rankings[name])
    share = rankings[best]
    lift = share / (top_size(num_nodes, percent) / num_nodes)
    top = f"its top {key}% of nodes serve {100 * share:.1f}% of the reads, {lift:.2f}x a uniform spread"
    if lift >= MIN_USEFUL_LIFT:
        return f"best score: {best}, {top} (ideal {100 * analysis.curves['ideal'][key]:.1f}%)"
    read = np.count_nonzero(analysis.counts) / num_nodes
    if read >= MOST_NODES_READ:
        return (
            f"the replay reads ~all nodes ({100 * read:.0f}%): a hot tier will not help at this batch size "
            f"(best score {best}: {top}); try a smaller --batch-size or a larger graph"
        )
    return (
        f"reads are spread nearly evenly: a hot tier will not help on this graph (best score {best}: {top}, "
        f"{100 * read:.0f}% of the nodes read)"
    )


def analyze_access(
    dataset: Dataset,
    *,
    replay: Replay = DEFAULT_REPLAY,
    methods: Sequence[str] = SCORE_METHODS,
    presample_seed: int | None = None,
    presample_epochs: int | None = None,
    percents: Sequence[float] = HIT_PERCENTS,
    damping: float = 0.85,
    wrpr_iterations: int | None = None,
    progress: Progress = NO_PROGRESS,
    option: str = "methods",
) -> AccessAnalysis:
    """Replay the training sampler on ``dataset`` as ``replay`` says (:class:`~graphtier.tiering.replay.Replay`:
    fanouts, a typed dataset's per-relation fanouts, batch size, epochs, seed and the epoch's seeds) and measure how
    well each score predicts reads.

    ``methods``: scores from :data:`SCORE_METHODS`, computed with the same ``replay``. ``presample`` rankings are
    sampled with ``presample_seed`` (default ``replay.seed + 1``, must differ from it) for ``presample_epochs``
    (default ``replay.epochs``) epochs, so they do not see the replay's random choices.
    ``wrpr_iterations``: rounds of ``wrpr`` (default 5, as in Algorithm 1). ``replay.seeds``: what training samples
    from: the training nodes (default), or the training pairs of the edge split with their negatives (the link
    sampler is replayed, ``replay.batch_size`` pairs per batch, and the seed-driven scores start from the link
    seeds). ``progress`` reports the replay and the score passes. ``option``: how errors name ``methods``
    (``--score`` for ``graphtier analyze``).
    """
    methods = list(dict.fromkeys(methods))
    for method in methods:
        if method not in SCORE_METHODS:
            raise OptionError(
                f"{{{option}}}: expected names from {', '.join(SCORE_METHODS)}, found {method!r}", options=(option,)
            )
    replay.check_relations(dataset)
    train = training_seeds(dataset, replay.seeds)
    seed = replay.seed
    presample_seed = seed + 1 if presample_seed is None else check_int("presample_seed", presample_seed, minimum=0)
    if presample_seed == seed and "presample" in methods:
        raise OptionError(f"--presample-seed: expected a seed different from --seed {seed}, found {presample_seed}")
    presample_epochs = replay.epochs if presample_epochs is None else check_int("presample_epochs", presample_epochs)
    presample = replace(replay, epochs=presample_epochs, seed=presample_seed)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    counts = replay_reads(dataset, replay, train=train, topology=False, progress=progress).features
    seconds["replay"] = time.perf_counter() - started
    scores: dict[str, np.ndarray] = {}
    for method in methods:
        result = compute_scores(
            dataset,
            method,
            damping=damping,
            iterations=wrpr_iterations if method == "wrpr" else None,
            replay=presample,
            progress=progress,
            option=option,
        )
        scores[method] = result.scores
        seconds[method] = result.seconds
    curves = {method: hit_ratio_curve(values, counts, percents) for method, values in scores.items()}
    curves["ideal"] = hit_ratio_curve(counts, counts, percents)
    config = {
        "dataset": str(dataset.path),
        "num_nodes": dataset.num_nodes,
        "num_edges": dataset.num_edges,
        "num_train": int(train.size),
        **replay.describe(),
        "presample_seed": presample_seed,
        "presample_epochs": presample_epochs,
        "damping": damping,
        "wrpr_iterations": wrpr_iterations if wrpr_iterations is not None else 5,
        "scores": methods,
    }
    analysis = AccessAnalysis(counts, scores, curves, config, seconds)
    if dataset.is_hetero:
        for t in dataset.schema.node_types:
            part = counts[t.offset : t.stop]
            rankings = {method: values[t.offset : t.stop] for method, values in scores.items()}
            rankings["ideal"] = part
            analysis.curves_by_type[t.name] = {
                name: hit_ratio_curve(values, part, percents) for name, values in rankings.items()
            }
            analysis.reads_by_type[t.name] = int(part.sum())
    return analysis


def plot_access(analysis: AccessAnalysis, path: str | Path) -> None:
    """Save a PNG of cumulative read share against % of nodes (one line per score and the ideal)."""
    plt = load_pyplot()
    figure, axes = plt.subplots(figsize=(6.4, 4.8), dpi=120)
    rankings = dict(analysis.scores)
    rankings["ideal"] = analysis.counts
    for name, values in rankings.items():
        x, y = cumulative_share(values, analysis.counts)
        style = {"color": "black", "linestyle": "--"} if name == "ideal" else {}
        label = f"{name} (top 10%: {analysis.curves[name].get('10', float('nan')):.0%})"
        axes.plot(x, y * 100.0, label=label, linewidth=1.5, **style)
    config = analysis.config
    fanouts = format_fanouts(config["fanouts"])
    axes.set_xlabel("nodes, in descending score order (% of all nodes)")
    axes.set_ylabel("cumulative share of feature reads (%)")
    axes.set_xlim(0, 100)
    axes.set_ylim(0, 100)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="lower right")
    fit_title(
        figure,
        axes,
        [
            f"{Path(config['dataset']).name}: feature reads",
            f"fanouts {fanouts}, {config['epochs']} epoch(s)"
            + (", link seeds" if config.get("task") == "link" else ""),
        ],
    )
    try:
        figure.savefig(path)
    except OSError as exc:
        raise OptionError(f"--plot: cannot write {path} ({exc.strerror})") from None
    finally:
        plt.close(figure)
