"""Tiering decisions above sampling: hotness scores by name, measured feature reads, access analysis."""
