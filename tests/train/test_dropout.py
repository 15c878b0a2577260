"""Fused ReLU + dropout: the counter-based mask, forward/backward against references, reproducibility."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.train import _dropout_kernels as kernels
from graphtier.train.dropout import ReLUDropout, dropout_threshold, relu_dropout


@settings(max_examples=40, deadline=None)
@given(
    key=st.integers(0, 2**62),
    p=st.floats(0.0, 0.95),
    size=st.integers(0, 300),
    cut=st.integers(0, 300),
)
def test_kernel_equals_reference_for_any_split(key: int, p: float, size: int, cut: int) -> None:
    rng = np.random.default_rng(key % 1000)
    x = rng.standard_normal(size).astype(np.float32)
    threshold = dropout_threshold(p)
    scale = 1.0 / (1.0 - p)
    out = np.full(size, np.nan, dtype=np.float32)
    cut = min(cut, size)
    kernels.relu_dropout_rows(x, out, np.uint64(key), threshold, scale, cut, size)  # any chunking
    kernels.relu_dropout_rows(x, out, np.uint64(key), threshold, scale, 0, cut)
    np.testing.assert_allclose(out, kernels.relu_dropout_reference(x, key, threshold, scale), rtol=1e-6)


def test_forward_backward_equal_relu_times_mask() -> None:
    torch.manual_seed(0)
    x = torch.randn(300, 70, requires_grad=True)
    p, key = 0.3, 12345
    out = relu_dropout(x, p, True, key=key)
    keep = torch.from_numpy(kernels.keep_mask_reference(key, dropout_threshold(p), x.numel()).reshape(x.shape))
    x_ref = x.detach().clone().requires_grad_(True)
    ref = torch.relu(x_ref) * keep / (1 - p)
    torch.testing.assert_close(out, ref)
    grad = torch.randn_like(out)
    out.backward(grad)
    ref.backward(grad)
    torch.testing.assert_close(x.grad, x_ref.grad)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_drop_rate_is_p(p: float) -> None:
    x = torch.ones(400_000)
    kept = float((relu_dropout(x, p, True, key=7) > 0).double().mean())
    # binomial standard deviation ~ 0.0008; the 16-bit threshold is within 1 / 65536 of p
    assert abs(kept - (1 - p)) < 0.005
    torch.testing.assert_close(relu_dropout(x, p, True, key=7).max(), torch.tensor(1.0 / (1 - p)))


def test_reproducible_by_torch_seed_and_eval_is_relu() -> None:
    layer = ReLUDropout(0.5)
    x = torch.randn(64, 33)
    torch.manual_seed(3)
    a = layer(x)
    torch.manual_seed(3)
    b = layer(x)
    c = layer(x)
    torch.testing.assert_close(a, b)
    assert not torch.equal(b, c)
    layer.eval()
    torch.testing.assert_close(layer(x), torch.relu(x))
    assert torch.equal(ReLUDropout(0.0).train()(x), torch.relu(x))


def test_same_mask_for_any_thread_count() -> None:
    x = torch.randn(1000, 300)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = relu_dropout(x, 0.5, True, key=99)
        torch.set_num_threads(2)
        two = relu_dropout(x, 0.5, True, key=99)
    finally:
        torch.set_num_threads(before)
    assert torch.equal(one, two)
