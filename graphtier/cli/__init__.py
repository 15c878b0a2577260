"""The ``graphtier`` command line.

Every subcommand lives in its own module of this package and exposes a click command named
``command``. User mistakes (:class:`~graphtier.errors.GraphtierError`, bad options) are printed as one
line on stderr, ``graphtier: error: ...``, with exit code 2 and no traceback.
"""

from __future__ import annotations

import importlib
import sys

import click

from graphtier.errors import GraphtierError

# One module per subcommand, each exposing ``command`` (a click.Command or click.Group).
COMMAND_MODULES: tuple[str, ...] = (
    "graphtier.cli.generate",
    "graphtier.cli.info",
    "graphtier.cli.prepare",
    "graphtier.cli.score",
    "graphtier.cli.reorder",
    "graphtier.cli.analyze",
    "graphtier.cli.train",
    "graphtier.cli.predict",
    "graphtier.cli.demo",
    "graphtier.cli.bench",
)

EXIT_USER_ERROR = 2


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="graphtier")
def cli() -> None:
    """graphtier: GNN training on graphs larger than GPU memory.

    Typical flow: `graphtier prepare` (or `generate`) a dataset once, `graphtier info` to inspect it,
    then `graphtier train` on it.
    """


for _module_name in COMMAND_MODULES:
    cli.add_command(importlib.import_module(_module_name).command)


def fail(message: str) -> "NoReturn":  # type: ignore[name-defined]  # noqa: F821
    """Print ``graphtier: error: message`` (one line) on stderr and exit with code 2."""
    one_line = " ".join(str(message).split())
    click.echo(f"graphtier: error: {one_line}", err=True)
    sys.exit(EXIT_USER_ERROR)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script and of ``python -m graphtier``."""
    try:
        exit_code = cli.main(args=argv, prog_name="graphtier", standalone_mode=False)
    except GraphtierError as exc:
        fail(str(exc))
    except click.exceptions.NoArgsIsHelpError as exc:  # bare `graphtier`
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
    except click.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        fail(f"{exc.format_message()}{hint}")
    except click.ClickException as exc:
        fail(exc.format_message())
    except click.exceptions.Abort:
        click.echo("graphtier: aborted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("graphtier: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    if isinstance(exit_code, int) and exit_code != 0:
        sys.exit(exit_code)
