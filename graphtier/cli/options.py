"""Option types shared by several commands."""

from __future__ import annotations

from typing import Any

import click


class FanoutsType(click.ParamType):
    """``25,10`` -> ``(25, 10)``: positive integers or -1, first hop from the seeds first (PyG order)."""

    name = "fanouts"

    def __init__(self, option: str) -> None:
        self.option = option

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[int, ...]:
        if isinstance(value, tuple):
            return value
        from graphtier.train.config import parse_fanouts

        return parse_fanouts(value, self.option)


def fanouts_option_type(option: str) -> FanoutsType:
    """A click type parsing a fanout list for ``option`` (named in its error messages)."""
    return FanoutsType(option)


SEED = click.IntRange(0, 2**63 - 1)
"""Click type of every ``--seed`` option: an integer in [0, 2^63) (what numpy and the kernels accept)."""
