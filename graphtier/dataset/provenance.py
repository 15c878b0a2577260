"""Where a dataset's features and labels come from, stored as ``meta.json``'s ``provenance``.

A synthetic feature matrix can silently encode the labels (features drawn around class centroids),
and then any model reaches near-perfect accuracy without learning anything about the graph. The
importers therefore record, for ``features`` and ``labels``, one of:

* ``{"kind": "input"}``: read from the user's files;
* ``{"kind": "synthetic", ...}``: generated. Synthetic features carry ``signal`` (the scale of
  the class centroid added to each labelled row; 0 = pure noise, no label information) and
  ``seed``; synthetic labels carry ``num_classes`` and ``seed``;
* ``{"kind": "none"}``: the dataset has none.

:func:`describe` turns this into short warnings for ``graphtier info``, ``train`` and the run report.
Datasets written before this field existed have no ``provenance``; :func:`provenance_of` infers it
from ``source`` (``graphtier generate`` datasets are synthetic through and through).
"""

from __future__ import annotations

from typing import Any

INPUT = "input"
SYNTHETIC = "synthetic"
NONE = "none"


def input_data() -> dict[str, Any]:
    """Provenance entry of features or labels read from the user's files."""
    return {"kind": INPUT}


def no_data() -> dict[str, Any]:
    """Provenance entry of a dataset without features (or labels)."""
    return {"kind": NONE}


def synthetic_features(signal: float, seed: int) -> dict[str, Any]:
    """Provenance entry of generated features; ``signal`` 0 means they carry no label information."""
    return {"kind": SYNTHETIC, "signal": float(signal), "seed": int(seed)}


def synthetic_labels(num_classes: int, seed: int) -> dict[str, Any]:
    """Provenance entry of generated (uniformly random) labels."""
    return {"kind": SYNTHETIC, "num_classes": int(num_classes), "seed": int(seed)}


def provenance_of(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta['provenance']``, or for older datasets a best guess from ``meta['source']``."""
    stored = meta.get("provenance")
    if isinstance(stored, dict):
        return stored
    source = meta.get("source") if isinstance(meta.get("source"), dict) else {}
    has_features = int(meta.get("feature_dim", 0)) > 0
    has_labels = int(meta.get("num_classes", 0)) > 0
    if source.get("generator"):
        return {
            "features": {"kind": SYNTHETIC, "generated": True} if has_features else no_data(),
            "labels": {"kind": SYNTHETIC, "generated": True} if has_labels else no_data(),
        }
    options = source.get("options") or {}
    features: dict[str, Any] = input_data() if has_features else no_data()
    if has_features and options.get("synthetic_features"):
        # written before the signal option existed: features were drawn around class centroids
        features = {"kind": SYNTHETIC, "signal": 1.0 if has_labels else 0.0, "seed": options.get("seed", 0)}
    return {"features": features, "labels": input_data() if has_labels else no_data()}


def describe(meta: dict[str, Any]) -> list[str]:
    """One short sentence per synthetic part of the dataset (empty when everything is real input).

    Example: ``["features are synthetic with label signal 1 (they encode the labels; accuracy says
    nothing about the graph)"]``.
    """
    prov = provenance_of(meta)
    notes: list[str] = []
    features = prov.get("features", {})
    labels = prov.get("labels", {})
    if features.get("kind") == SYNTHETIC:
        if features.get("generated"):
            notes.append("features are synthetic (graphtier generate: class centroids plus noise)")
        elif float(features.get("signal", 0.0)) > 0:
            notes.append(
                f"features are synthetic with label signal {float(features['signal']):g} "
                "(they encode the labels; accuracy says nothing about the graph)"
            )
        else:
            notes.append("features are synthetic random noise (no label information)")
    if labels.get("kind") == SYNTHETIC:
        if labels.get("generated"):
            notes.append("labels are synthetic (graphtier generate)")
        else:
            k = labels.get("num_classes")
            notes.append(
                f"labels are synthetic: uniformly random over {k} classes "
                f"(expected accuracy about {1 / k:.3f}; for throughput runs only)"
                if k
                else "labels are synthetic"
            )
    nodes_only = int(meta.get("nodes_only_in_node_data", 0) or 0)
    if nodes_only:
        notes.append(f"{nodes_only:,} nodes have features/labels but no edges (kept as isolated nodes)")
    return notes
