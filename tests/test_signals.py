"""SIGTERM is handled like Ctrl-C by the CLI (graphtier._signals)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

from graphtier._signals import Terminated


def test_sigterm_raises_keyboard_interrupt_in_a_fresh_interpreter() -> None:
    code = textwrap.dedent(
        """
        import os, signal, sys
        from graphtier._signals import terminate_as_interrupt
        assert terminate_as_interrupt()
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            import time; time.sleep(5)
        except KeyboardInterrupt as exc:
            print("clean-up ran", type(exc).__name__)
            sys.exit(0)
        sys.exit(1)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "clean-up ran Terminated" in done.stdout


def test_a_handler_set_by_the_program_is_kept() -> None:
    code = textwrap.dedent(
        """
        import signal
        from graphtier._signals import terminate_as_interrupt
        mine = lambda s, f: None
        signal.signal(signal.SIGTERM, mine)
        assert not terminate_as_interrupt()
        assert signal.getsignal(signal.SIGTERM) is mine
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_cli_exits_130_with_one_line_on_sigterm(tmp_path) -> None:
    # `graphtier demo` into a fresh folder runs long enough to be terminated mid-way
    proc = subprocess.Popen(
        [sys.executable, "-m", "graphtier", "generate", str(tmp_path / "g"), "--nodes", "3000000", "--avg-degree", "20"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    import time

    time.sleep(4.0)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.endswith("graphtier: interrupted\n") and "\n\n" not in err and not err.startswith("\n")
    assert "Traceback" not in err
    assert issubclass(Terminated, KeyboardInterrupt)


def test_bare_command_prints_the_help_and_exits_0() -> None:
    done = subprocess.run([sys.executable, "-m", "graphtier"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Usage: graphtier" in done.stdout and "Traceback" not in done.stderr


def _numba_style_error() -> SystemError:
    try:
        try:
            raise Terminated("signal 15")
        except KeyboardInterrupt as interrupt:
            raise SystemError("CPUDispatcher(kernel) returned a result with an exception set") from interrupt
    except SystemError as error:
        return error


def test_an_interrupt_inside_a_compiled_kernel_is_one_line(monkeypatch, capsys) -> None:
    import graphtier.cli as cli_module
    from graphtier._signals import interrupt_behind
    from tests.cli.helpers import run

    assert isinstance(interrupt_behind(_numba_style_error()), Terminated)
    assert interrupt_behind(SystemError("a real bug")) is None

    def interrupted(ctx):  # noqa: ANN001, ANN202 - stands in for a command whose numba kernel was interrupted
        raise _numba_style_error()

    monkeypatch.setattr(cli_module.cli, "invoke", interrupted)
    code, _, err = run(["info", "x"], capsys)
    assert code == 130 and err == "graphtier: interrupted\n"


def test_a_signal_during_an_import_is_raised_after_it(tmp_path) -> None:
    """An interrupt raised inside an import aborts the process when the module is an extension running Python
    code from C++ (torch): the handler waits until the import is over, then raises in the importing code."""
    (tmp_path / "slow_module.py").write_text(
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(0.5)\nCOMPLETE = True\n"
    )
    code = textwrap.dedent(
        """
        import sys, time
        from graphtier._signals import terminate_as_interrupt
        terminate_as_interrupt()
        try:
            import slow_module
            print("imported", slow_module.COMPLETE)
            time.sleep(5)
        except KeyboardInterrupt as exc:
            print("raised after the import:", type(exc).__name__, "slow_module" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["imported True", "raised after the import: Terminated True"]
