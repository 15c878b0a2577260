"""The ``graphtier`` command line.

Every subcommand lives in its own module of this package and exposes a click command named
``command``. User mistakes (:class:`~graphtier.errors.GraphtierError`, bad options) are printed as one
line on stderr, ``graphtier: error: ...``, with exit code 2 and no traceback. As a last resort a
``MemoryError`` or an ``OSError`` whose errno means the machine cannot do it (disk full, read-only,
permission denied, busy, ...; :data:`~graphtier.dataset.resources.RESOURCE_ERRNOS`) is reported the
same way; any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import functools
import importlib
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from graphtier._openmp import prefer_passive_wait
from graphtier._signals import interrupt_behind, terminate_as_interrupt
from graphtier.errors import GraphtierError, error_line, render_error

# Every subcommand: its module (exposing ``command``, a click.Command or click.Group) and the one-line
# summary `graphtier --help` shows. A module is imported only when its command runs (or shows its
# own help), so start-up does not pay for torch, numba or the kernels of commands that are not used.
COMMANDS: dict[str, tuple[str, str]] = {
    "generate": ("graphtier.cli.generate", "Generate a synthetic power-law dataset (degree-corrected SBM)."),
    "info": ("graphtier.cli.info", "Show nodes, edges, in-degree skew, features, labels, splits of a dataset."),
    "prepare": ("graphtier.cli.prepare", "Import a graph from a public format into a graphtier dataset."),
    "score": ("graphtier.cli.score", "Score every node by how often sampling is expected to read its features."),
    "reorder": ("graphtier.cli.reorder", "Renumber nodes by descending score (hot rows first) into a new dataset."),
    "baseline": ("graphtier.cli.baseline", "Score a split by time with EdgeBank (edges seen before): the bar to beat."),
    "analyze": ("graphtier.cli.analyze", "Measure how well each score predicts the feature reads of sampling."),
    "plan": ("graphtier.cli.plan", "Size feature and graph tiers from a sampling trace; multi-GPU placement."),
    "train": ("graphtier.cli.train", "Train a GNN on DATASET with mini-batch neighbour sampling."),
    "predict": ("graphtier.cli.predict", "Predict every node of DATASET with a model saved by train --save-model."),
    "demo": ("graphtier.cli.demo", "Generate a graph, train GraphSAGE on it and compare with an MLP."),
    "bench": ("graphtier.cli.bench", "Measure graphtier's building blocks (sampling, gather) on this machine."),
}
COMMAND_MODULES: tuple[str, ...] = tuple(module for module, _ in COMMANDS.values())

EXIT_USER_ERROR = 2


def _announce_compiles(command: click.Command) -> None:
    """Make ``command`` (and a group's subcommands) show the first-compile notice when it runs, not on --help."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _announce_compiles(sub)
        return
    callback = command.callback
    if callback is None or getattr(callback, "_announces_compiles", False):
        return

    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        from graphtier._compile_notice import install_compile_notice

        install_compile_notice()
        return callback(*args, **kwargs)

    run._announces_compiles = True  # type: ignore[attr-defined]
    command.callback = run


class LazyGroup(click.Group):
    """A click group whose subcommands are imported from :data:`COMMANDS` only when they are used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        if cmd_name not in COMMANDS:
            return None
        command = importlib.import_module(COMMANDS[cmd_name][0]).command
        _announce_compiles(command)
        self.commands[cmd_name] = command
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``--help`` from the summaries in COMMANDS (nothing is imported)."""
        rows = [
            (name, COMMANDS[name][1] if name in COMMANDS else self.commands[name].get_short_help_str())
            for name in self.list_commands(ctx)
        ]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="graphtier")
def cli() -> None:
    """graphtier: GNN training on graphs larger than GPU memory.

    Typical flow: `graphtier prepare` (or `generate`) a dataset once, `graphtier info` to inspect it,
    then `graphtier train` on it.
    """


def fail(message: str) -> "NoReturn":  # type: ignore[name-defined]  # noqa: F821
    """Print ``graphtier: error: message`` (one line) on stderr and exit with code 2."""
    click.echo(error_line(message), err=True)
    sys.exit(EXIT_USER_ERROR)


def _invoke(args: list[str]) -> Any:
    """Parse ``args`` and run the command: ``cli.main`` without its own handlers, so Ctrl-C reaches :func:`main`
    as KeyboardInterrupt (click's handler prints a blank line first) and every error is reported one way."""
    try:
        with cli.make_context("graphtier", args) as ctx:
            return cli.invoke(ctx)
    except click.exceptions.Exit as exc:  # --help, --version
        return exc.exit_code


def shadowing_folder() -> Path | None:
    """The folder imported as ``graphtier`` in place of the package, or None.

    From the folder that holds a clone of the repository (named ``graphtier``), ``import graphtier`` finds
    the clone before an editable install's import hook and makes it an empty namespace package (no
    ``__init__.py``, so none of graphtier's code runs and ``graphtier.predict`` does not exist). The
    command line still works, because each submodule is then found by the install's hook."""
    package = sys.modules.get("graphtier")
    if package is None or getattr(package, "__file__", None) is not None:
        return None
    locations = list(getattr(package, "__path__", []))
    return Path(locations[0]) if locations else None


def _note_shadowing() -> None:
    folder = shadowing_folder()
    if folder is None:
        return
    click.echo(
        f"graphtier: note: the folder {folder} shadows the graphtier package when Python runs from "
        f"{folder.parent}: a script run there gets an empty 'graphtier' (no attribute 'predict', ...); "
        "run scripts from another folder or from inside the clone",
        err=True,
    )


def _interrupted() -> NoReturn:
    """End an interrupted run: remove the dataset temporaries still there, one line, exit code 130."""
    swap = sys.modules.get("graphtier.dataset.swap")  # loaded only if a command wrote a dataset
    if swap is not None:
        swap.remove_tracked()
    click.echo("graphtier: interrupted", err=True)
    sys.exit(130)


def _ignore_late_signals() -> None:
    """Ignore SIGINT and SIGTERM from now on: the command has finished (its outputs are complete or removed), and an
    interrupt during the interpreter's shutdown would only print a traceback from joining threads."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(signum, signal.SIG_IGN)
        except (ValueError, OSError):  # not the main thread
            pass


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script and of ``python -m graphtier``."""
    terminate_as_interrupt()  # SIGTERM runs the same clean-up as Ctrl-C (graphtier._signals)
    prefer_passive_wait()  # before any command imports torch or numba (graphtier._openmp)
    _note_shadowing()
    try:
        _run(argv)
    finally:
        if argv is None:  # the process's own command line: the run is over, a late signal must not print a traceback
            _ignore_late_signals()


def _run(argv: list[str] | None) -> None:
    exit_code: Any = 0
    try:
        exit_code = _invoke(sys.argv[1:] if argv is None else list(argv))
    except GraphtierError as exc:
        fail(render_error(exc, cli=True))  # options named as the flags the user typed
    except click.exceptions.NoArgsIsHelpError as exc:  # bare `graphtier`
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
    except click.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        fail(f"{exc.format_message()}{hint}")
    except click.ClickException as exc:
        fail(exc.format_message())
    except click.exceptions.Abort:
        _interrupted()  # click turns Ctrl-C into Abort
    except KeyboardInterrupt:
        _interrupted()
    except SystemError as exc:  # Ctrl-C or SIGTERM that arrived inside a numba kernel
        if interrupt_behind(exc) is None:
            raise
        _interrupted()
    except BrokenPipeError:
        sys.exit(0)
    except MemoryError as exc:  # last resort: an allocation no estimate caught
        fail(f"out of memory: {exc or 'an allocation failed'} (free memory or use a smaller input)")
    except OSError as exc:  # last resort: only "the machine cannot do this" errnos, never bugs
        # imported here: graphtier.dataset loads numba, which `graphtier --help` must not pay for
        from graphtier.dataset.resources import is_resource_error, os_error_message

        if not is_resource_error(exc):
            raise
        fail(os_error_message(exc))
    if isinstance(exit_code, int) and exit_code != 0:
        sys.exit(exit_code)
