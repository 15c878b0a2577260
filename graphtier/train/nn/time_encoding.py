"""Edge inputs of a layer: a block's edge features and the time encoding of its edge ages, one vector per edge.

:class:`TimeEncoding` is TGAT's functional time encoding (Xu et al. 2020), as TGN and PyG's ``TimeEncoder`` use it:
``phi(dt) = cos(dt * w + b)`` with ``w`` initialised to ``1 / 10 ** linspace(0, 9, dim)`` (periods from 1 to 10^9
time units: seconds to decades for unix times) and ``b`` to 0, both learned, or kept at those values (``fixed``,
as GraphMixer does). :class:`EdgeInputs` concatenates what a block carries (:class:`graphtier.sampling.Block`): its
``edge_attr`` [E, d_e] and the time encoding of its ``edge_age`` [E] into the ``edge_attr`` [E, d_e + t_dim] a PyG
layer with ``edge_dim`` reads (``GATConv``, ``GINEConv``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from graphtier.errors import OptionError


def time_frequencies(dim: int) -> np.ndarray:
    """TGAT's initial frequencies: float32 [dim], ``1 / 10 ** linspace(0, 9, dim)``."""
    return (1.0 / 10 ** np.linspace(0, 9, dim, dtype=np.float64)).astype(np.float32)


class TimeEncoding(nn.Module):
    """``dt`` float [E] -> ``cos(dt[:, None] * weight + bias)`` float32 [E, dim].

    ``weight`` and ``bias`` (float32 [dim] each) are parameters, or buffers with ``fixed`` (the same state-dict
    keys either way, so a saved model loads into both).
    """

    def __init__(self, dim: int, *, fixed: bool = False) -> None:
        super().__init__()
        if dim < 1:
            raise ValueError(f"time encoding width must be positive, got {dim}")
        self.dim = dim
        self.fixed = fixed
        weight = torch.from_numpy(time_frequencies(dim))
        bias = torch.zeros(dim)
        if fixed:
            self.register_buffer("weight", weight)
            self.register_buffer("bias", bias)
        else:
            self.weight = nn.Parameter(weight)
            self.bias = nn.Parameter(bias)

    def forward(self, dt: Tensor) -> Tensor:
        """``dt`` float [E] (time units, on the module's device) -> float32 [E, dim].

        The phase ``dt * w + b`` is computed in float64: ages of unix times reach 10^8 - 10^9 seconds, where a
        float32 phase of the slow frequencies would keep no digit below the period (a cheap [E, dim] pass).
        """
        phase = torch.addcmul(self.bias.double(), dt.double().unsqueeze(-1), self.weight.double())
        return torch.cos(phase).to(self.weight.dtype)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, fixed={self.fixed}"


class EdgeInputs(nn.Module):
    """The edge vectors of a block: ``edge_attr`` [E, edge_dim] (when ``edge_dim``) and the time encoding of
    ``edge_age`` [E] (when ``time_dim`` > 0), concatenated in that order into float [E, edge_dim + time_dim].

    A block without the attribute a model reads, or with one of another shape, is refused in one line
    (OptionError naming the option the model was built with, ``edge_dim`` or ``time_encoding``): a model built
    with edge inputs needs them in every block. Blocks that lack the attributes altogether (any object with
    ``edge_index``) read as None.
    """

    def __init__(self, edge_dim: int | None, time_dim: int = 0, *, time_fixed: bool = False) -> None:
        super().__init__()
        if not edge_dim and not time_dim:
            raise ValueError("EdgeInputs needs edge features (edge_dim) or a time encoding (time_dim)")
        self.edge_dim = edge_dim or 0
        self.time_dim = time_dim
        self.time = TimeEncoding(time_dim, fixed=time_fixed) if time_dim else None

    @property
    def width(self) -> int:
        """The width of an edge vector: ``edge_dim + time_dim``."""
        return self.edge_dim + self.time_dim

    def forward(self, block: Any, dtype: torch.dtype = torch.float32) -> Tensor:
        """float ``dtype`` [block's E, :attr:`width`] on the device of the block's edge inputs."""
        parts = []
        if self.edge_dim:
            attr = getattr(block, "edge_attr", None)
            edges = block.num_edges
            if attr is None or attr.dim() != 2 or tuple(attr.shape) != (edges, self.edge_dim):
                found = "a block without it" if attr is None else f"shape {tuple(attr.shape)}"
                raise OptionError(
                    f"edge_dim={self.edge_dim}: the model reads Block.edge_attr [{edges}, {self.edge_dim}] (the "
                    f"dataset's edge features), found {found}"
                )  # fmt: skip
            parts.append(attr.to(dtype))
        if self.time is not None:
            age = getattr(block, "edge_age", None)
            edges = block.num_edges
            if age is None or tuple(age.shape) != (edges,):
                found = "a block without it" if age is None else f"shape {tuple(age.shape)}"
                raise OptionError(
                    f"{{time_encoding={self.time_dim}}}: the model encodes Block.edge_age [{edges}] (the ages of a "
                    f"temporal batch's edges), found {found}", options=("time_encoding",),
                )  # fmt: skip
            parts.append(self.time(age).to(dtype))
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)
