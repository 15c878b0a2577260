"""Which Triton interpreters the interpreted kernel tests run under, and the stand-in that skips them elsewhere."""

from __future__ import annotations

import pytest

from tests import interpreted


@pytest.mark.parametrize(
    ("triton", "numpy", "runs"),
    [
        ("3.6.0", "2.5.0", False),  # the GPU machine: Triton 3.6 interpreter fails with NumPy >= 2.4
        ("3.6.0", "2.4.1", False),
        ("3.7.1+git1234abcd", "2.4.0", False),
        ("3.6.0", "2.3.5", True),
        ("3.8.0", "2.5.0", True),
        ("3.9.0", "2.4.1", True),
    ],
)
def test_interpreter_skip_reason_by_version(triton: str, numpy: str, runs: bool) -> None:
    reason = interpreted.interpreter_skip_reason(triton, numpy)
    assert (reason is None) == runs
    if reason is not None:
        assert f"Triton {triton}" in reason and f"NumPy {numpy}" in reason
    assert interpreted.interpreter_skip_reason(None, numpy) == "needs triton"


def test_an_unusable_interpreter_skips_only_the_tests_that_use_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interpreted, "INTERPRETER_SKIP_REASON", interpreted.interpreter_skip_reason("3.6.0", "2.5.0"))
    monkeypatch.setattr(interpreted, "HAS_TRITON", True)
    stand_in = interpreted.load_interpreted("memory/_no_such_kernels.py")  # nothing is imported
    assert not hasattr(stand_in, "__wrapped__")  # pytest's and inspect's probes see a plain module
    with pytest.raises(pytest.skip.Exception, match="Triton 3.6.0 interpreter cannot run"):
        stand_in.gather_rows_triton  # noqa: B018
