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
    assert err.strip().splitlines()[-1] == "graphtier: interrupted"
    assert "Traceback" not in err
    assert issubclass(Terminated, KeyboardInterrupt)
