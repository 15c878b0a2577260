"""graphtier sets OMP_WAIT_POLICY=PASSIVE before torch/numba load, and keeps a value the user set."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from graphtier import _openmp


def test_sets_passive_when_unset_and_no_openmp_user_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    for name in _openmp.OPENMP_USERS:
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert _openmp.prefer_passive_wait() is True
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"


def test_keeps_the_users_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert _openmp.prefer_passive_wait() is False
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_too_late_once_torch_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setitem(sys.modules, "torch", sys.modules.get("torch", object()))
    assert _openmp.prefer_passive_wait() is False
    assert "OMP_WAIT_POLICY" not in os.environ


@pytest.mark.parametrize(("given", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_importing_graphtier_sets_it_before_torch_loads(given: str | None, expected: str) -> None:
    """In a fresh interpreter: ``import graphtier`` then torch; the runtime sees the policy."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given is not None:
        env["OMP_WAIT_POLICY"] = given
    code = "import graphtier, os, sys; assert 'torch' not in sys.modules; print(os.environ['OMP_WAIT_POLICY'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == expected
