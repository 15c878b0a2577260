"""The row-wise Adam kernel against the torch reference (gather, update, scatter back) on random tables."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import graphtier.train.nn.tiered_embedding as tiered
from graphtier.train.nn._adam_kernels import adam_rows, sum_by_id
from graphtier.train.nn.tiered_embedding import adam_rows_reference, sum_by_id_reference


def _tier(count: int, dim: int, dtype: torch.dtype, seed: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return {
        "weight": torch.randn(count, dim, generator=gen, dtype=dtype),
        "exp_avg": torch.randn(count, dim, generator=gen, dtype=dtype) * 0.1,
        "exp_avg_sq": torch.rand(count, dim, generator=gen, dtype=dtype) * 0.1,
        "steps": torch.randint(0, 5, (count,), generator=gen, dtype=torch.int32),
    }


@settings(max_examples=40, deadline=None)
@given(
    count=st.integers(1, 300),
    dim=st.integers(1, 70),
    double=st.booleans(),
    weight_decay=st.sampled_from([0.0, 0.01]),
    seed=st.integers(0, 2**16),
)
def test_kernel_equals_the_reference(count: int, dim: int, double: bool, weight_decay: float, seed: int) -> None:
    dtype = torch.float64 if double else torch.float32
    kernel, reference = _tier(count, dim, dtype, seed), _tier(count, dim, dtype, seed)
    rng = np.random.default_rng(seed)
    for step in range(1, 4):  # rows touched again in later steps, and rows first touched at a later step
        rows = torch.from_numpy(rng.choice(count, size=int(rng.integers(1, count + 1)), replace=False))
        grad = torch.from_numpy(rng.normal(size=(rows.shape[0], dim))).to(dtype)
        lr, betas, eps = 0.01 * step, (0.9, 0.999), 1e-8
        adam_rows(*(kernel[k].numpy() for k in ("weight", "exp_avg", "exp_avg_sq", "steps")), rows.numpy(),
                  grad.numpy(), step, lr, betas[0], betas[1], eps, weight_decay)  # fmt: skip
        adam_rows_reference(reference, rows, grad, step, lr, betas, eps, weight_decay)
        tolerance = {"rtol": 1e-12, "atol": 1e-12} if double else {"rtol": 2e-5, "atol": 2e-6}
        for key in ("weight", "exp_avg", "exp_avg_sq"):
            torch.testing.assert_close(kernel[key], reference[key], **tolerance)
        assert torch.equal(kernel["steps"], reference["steps"])


def test_untouched_rows_are_not_written() -> None:
    tier = _tier(50, 8, torch.float32, 1)
    before = {key: value.clone() for key, value in tier.items()}
    rows = torch.tensor([3, 17, 40])
    adam_rows(*(tier[k].numpy() for k in ("weight", "exp_avg", "exp_avg_sq", "steps")), rows.numpy(),
              np.ones((3, 8), np.float32), 7, 0.1, 0.9, 0.999, 1e-8, 0.0)  # fmt: skip
    other = torch.ones(50, dtype=torch.bool)
    other[rows] = False
    for key in tier:
        assert torch.equal(tier[key][other], before[key][other])
        assert not torch.equal(tier[key][rows], before[key][rows])


@pytest.mark.parametrize("device_path", [False, True])
def test_the_table_step_takes_the_kernel_on_the_cpu(device_path: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(tiered, "adam_rows", lambda *a: calls.append("kernel"))
    monkeypatch.setattr(tiered, "adam_rows_reference", lambda *a: calls.append("reference"))
    tier = _tier(10, 4, torch.float16 if device_path else torch.float32, 0)
    tiered._adam_rows(tier, torch.tensor([1, 2]), torch.ones(2, 4), 1, 0.1, (0.9, 0.999), 1e-8, 0.0)
    assert calls == (["reference"] if device_path else ["kernel"])


@settings(max_examples=40, deadline=None)
@given(count=st.integers(1, 200), n=st.integers(1, 400), dim=st.integers(1, 40), seed=st.integers(0, 2**16))
def test_sum_by_id_equals_unique_and_index_add(count: int, n: int, dim: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, count, n).astype(np.int64)
    grads = rng.normal(size=(n, dim)).astype(np.float32)
    slot = np.full(count, -1, dtype=np.int32)
    unique, summed = sum_by_id(ids, grads, slot)
    assert (slot == -1).all()  # the scratch is left as it was found
    _, first = np.unique(ids, return_index=True)
    np.testing.assert_array_equal(unique, ids[np.sort(first)])  # order of first occurrence
    ref_unique, ref_summed = sum_by_id_reference(torch.from_numpy(ids), torch.from_numpy(grads))
    order = np.argsort(unique)
    np.testing.assert_array_equal(unique[order], ref_unique.numpy())
    np.testing.assert_allclose(summed[order], ref_summed.numpy(), rtol=1e-6, atol=1e-6)
