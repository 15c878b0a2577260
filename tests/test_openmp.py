"""OMP_WAIT_POLICY=PASSIVE before torch/numba load, set by the command line and by graphtier.configure_threads()
(never by ``import graphtier``); a value the user set is kept."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest

import graphtier
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


def _fresh(code: str, given: str | None = None) -> list[str]:
    """Run ``code`` in a fresh interpreter (OMP_WAIT_POLICY as ``given``); its output lines."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given is not None:
        env["OMP_WAIT_POLICY"] = given
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def test_importing_graphtier_changes_nothing() -> None:
    code = "import os, graphtier; print(os.environ.get('OMP_WAIT_POLICY', 'unset'))"
    assert _fresh(code) == ["unset"]


@pytest.mark.parametrize(("given", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_configure_threads_before_torch_sets_the_policy_and_the_counts(given: str | None, expected: str) -> None:
    """In a fresh interpreter: configure_threads() then torch; the runtime sees the policy and the counts."""
    code = (
        "import graphtier, os, sys; graphtier.configure_threads(1, numba_threads=1); "
        "assert 'torch' in sys.modules and 'numba' in sys.modules; import torch, numba; "
        "print(os.environ['OMP_WAIT_POLICY'], torch.get_num_threads(), numba.get_num_threads())"
    )
    assert _fresh(code, given) == [expected, "1", "1"]


def test_configure_threads_sets_the_policy_before_importing_torch() -> None:
    code = (
        "import graphtier, os, sys; graphtier.configure_threads(); "
        "print(os.environ['OMP_WAIT_POLICY'], 'torch' in sys.modules)"
    )
    assert _fresh(code) == ["PASSIVE", "False"]


def test_configure_threads_after_torch_warns_and_leaves_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setitem(sys.modules, "torch", sys.modules.get("torch", object()))
    with pytest.warns(RuntimeWarning, match="before importing torch"):
        graphtier.configure_threads()
    assert "OMP_WAIT_POLICY" not in os.environ
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")  # the user's choice: nothing to warn about
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graphtier.configure_threads()


def test_configure_threads_names_a_bad_argument() -> None:
    with pytest.raises(graphtier.OptionError, match=r"num_threads= expected a positive integer or None, found 0"):
        graphtier.configure_threads(0)


def test_the_command_line_sets_it_before_a_command_loads_torch() -> None:
    code = (
        "import os, sys; from graphtier.cli import main; main(['--version']); "
        "print(os.environ['OMP_WAIT_POLICY'], 'torch' in sys.modules)"
    )
    assert _fresh(code)[-2:] == ["PASSIVE", "False"]
