"""The options of ``graphtier generate`` / :func:`graphtier.dataset.synthetic.generate.generate`: their defaults and
their one-line checks (each error names the CLI flag)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from graphtier.dataset.format import FEATURE_DTYPES
from graphtier.errors import OptionError

DEFAULT_NUM_CLASSES = 16
DEFAULT_FEATURE_DIM = 128
DEFAULT_DEGREE_EXPONENT = 2.1
DEFAULT_HOMOPHILY = 0.8
DEFAULT_FEATURE_NOISE = 1.0
DEFAULT_TRAIN_FRACTION = 0.01
DEFAULT_VALID_FRACTION = 0.01
DEFAULT_TEST_FRACTION = 0.02
DEFAULT_CHUNK_EDGES = 1 << 22


# ---------------------------------------------------------------------------------------------- options
def _check(condition: bool, option: str, expected: str, found: Any) -> None:
    if not condition:
        raise OptionError(f"generate: option {option} expected {expected}, found {found!r}")


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def validate_options(opts: dict[str, Any]) -> None:
    """Raise a one-line :class:`OptionError` naming the CLI flag of the first bad option in ``opts``."""
    _check(_is_int(opts["nodes"]) and opts["nodes"] >= 1, "--nodes", "an integer >= 1", opts["nodes"])
    _check(opts["nodes"] < 2**62, "--nodes", "fewer than 2^62 nodes", opts["nodes"])
    degree = opts["avg_degree"]
    _check(
        isinstance(degree, (int, float)) and not isinstance(degree, bool) and math.isfinite(degree) and degree >= 0,
        "--avg-degree",
        "a finite number >= 0",
        degree,
    )
    _check(
        degree <= max(opts["nodes"] - 1, 0) or degree == 0,
        "--avg-degree",
        f"at most nodes - 1 = {opts['nodes'] - 1}",
        degree,
    )
    _check(
        _is_int(opts["num_classes"]) and 1 <= opts["num_classes"] <= min(opts["nodes"], 32767),
        "--num-classes",
        f"an integer in [1, {min(opts['nodes'], 32767)}]",
        opts["num_classes"],
    )
    _check(
        _is_int(opts["feature_dim"]) and opts["feature_dim"] >= 0,
        "--feature-dim",
        "an integer >= 0",
        opts["feature_dim"],
    )
    edge_dim = opts.get("edge_feature_dim", 0)
    _check(_is_int(edge_dim) and edge_dim >= 0, "--edge-feature-dim", "an integer >= 0", edge_dim)
    gamma = opts["degree_exponent"]
    _check(
        isinstance(gamma, (int, float)) and math.isfinite(gamma) and 1.05 <= gamma <= 100,
        "--degree-exponent",
        "a number in [1.05, 100]",
        gamma,
    )
    h = opts["homophily"]
    _check(isinstance(h, (int, float)) and 0.0 <= h <= 1.0, "--homophily", "a number in [0, 1]", h)
    noise = opts["feature_noise"]
    _check(
        isinstance(noise, (int, float)) and math.isfinite(noise) and noise >= 0,
        "--feature-noise",
        "a finite number >= 0",
        noise,
    )
    for name in ("train_fraction", "valid_fraction", "test_fraction"):
        f = opts[name]
        _check(isinstance(f, (int, float)) and 0.0 <= f <= 1.0, "--" + name.replace("_", "-"), "a number in [0, 1]", f)
    total = opts["train_fraction"] + opts["valid_fraction"] + opts["test_fraction"]
    _check(total <= 1.0 + 1e-9, "--train/valid/test-fraction", "fractions summing to at most 1", round(total, 6))
    _check(
        opts["feature_dtype"] in FEATURE_DTYPES,
        "--feature-dtype",
        f"one of {', '.join(FEATURE_DTYPES)}",
        opts["feature_dtype"],
    )
    _check(_is_int(opts["seed"]) and 0 <= opts["seed"] < 2**63, "--seed", "an integer in [0, 2^63)", opts["seed"])
    hub = opts["max_degree"]
    _check(
        hub is None or (isinstance(hub, (int, float)) and not isinstance(hub, bool) and math.isfinite(hub) and hub > 0),
        "--max-degree",
        "a finite number > 0",
        hub,
    )
    _check(
        _is_int(opts["chunk_edges"]) and opts["chunk_edges"] >= 1,
        "--chunk-edges",
        "an integer >= 1",
        opts["chunk_edges"],
    )
