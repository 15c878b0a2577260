"""The command-line reference page, generated from the click definitions (tools/mkdocs_hooks.py).

Every command of ``graphtier`` (:data:`graphtier.cli.COMMANDS`, subcommands of groups included) with its usage
line, its help text and a table of its arguments and options: names, type, default and help, as click parses
them, so the page cannot drift from the code.
"""

from __future__ import annotations

import html
import re

import click

from graphtier.cli import COMMANDS, cli


def _text(value: str) -> str:
    """Markdown-safe prose: HTML escaped, ``*`` escaped outside backticks, click's ``\\b`` markers dropped."""
    parts = re.split(r"(`[^`]*`)", html.escape(value, quote=False))
    return "".join(part if part.startswith("`") else part.replace("*", r"\*") for part in parts).replace("\b", "")


def _cell(value: str) -> str:
    return _text(" ".join(value.split())).replace("|", r"\|")


def _help(command: click.Command) -> str:
    """The command's help as paragraphs (a ``\\b`` paragraph keeps its lines)."""
    text = click.unstyle(command.help or command.short_help or "").strip()
    paragraphs = []
    for paragraph in re.split(r"\n\s*\n", text):
        if paragraph.lstrip().startswith("\b"):
            lines = [line.strip() for line in paragraph.replace("\b", "").strip().splitlines()]
            paragraphs.append("<br>\n".join(_text(line) for line in lines if line))
        else:
            paragraphs.append(_text(" ".join(paragraph.split())))
    return "\n\n".join(p for p in paragraphs if p)


def _type(param: click.Parameter) -> str:
    if isinstance(param, click.Option) and param.is_flag:
        return "flag"
    kind = param.type
    if isinstance(kind, click.Choice):
        return " \\| ".join(f"`{choice}`" for choice in kind.choices)
    name = getattr(kind, "name", type(kind).__name__).lower()
    return name + (" (repeatable)" if getattr(param, "multiple", False) else "")


def _default(param: click.Parameter) -> str:
    default = param.default
    unset = type(default).__name__ == "Sentinel"  # click 8.2+: no default given
    if (
        unset
        or callable(default)
        or default is None
        or default == ()
        or (isinstance(param, click.Option) and default is False)
    ):
        return ""
    if isinstance(param, click.Option) and param.is_flag and default is True:
        return "on"
    if isinstance(default, (list, tuple)):
        default = ",".join(str(item) for item in default)
    return f"`{default}`"


def _names(param: click.Parameter) -> str:
    if isinstance(param, click.Argument):
        return f"`{param.human_readable_name}`"
    names = ", ".join(f"`{name}`" for name in param.opts)
    if param.secondary_opts:
        names += " / " + ", ".join(f"`{name}`" for name in param.secondary_opts)
    return names


def _params_table(command: click.Command, ctx: click.Context) -> list[str]:
    rows = []
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        if isinstance(param, click.Argument):
            help_text = "argument (required)" if param.required else "argument (optional)"
        else:
            help_text = param.help or ""
        if isinstance(param, click.Option) and param.required:
            help_text = f"required. {help_text}"
        rows.append(f"| {_names(param)} | {_type(param)} | {_default(param)} | {_cell(help_text)} |")
    if not rows:
        return []
    return ["| argument / option | type | default | description |", "|---|---|---|---|", *rows, ""]


def _command_lines(command: click.Command, ctx: click.Context, level: int) -> list[str]:
    path = ctx.command_path
    lines = [f"{'#' * level} {path}", "", "```text", f"{path} {' '.join(command.collect_usage_pieces(ctx))}", "```", ""]
    lines += [_help(command), "", *_params_table(command, ctx)]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            lines += _command_lines(sub, click.Context(sub, info_name=name, parent=ctx), level + 1)
    return lines


def cli_reference() -> str:
    """The markdown of the command-line reference: every command, subcommand, argument and option."""
    root = click.Context(cli, info_name="graphtier", **cli.context_settings)
    lines = [
        "# Command line",
        "",
        "Generated from the click definitions of `graphtier` when the site is built (`graphtier COMMAND --help`",
        "prints the same). Every command reports a user mistake as one line, `graphtier: error: ...`, exit code 2.",
        "",
        "| command | what it does |",
        "|---|---|",
        *(f"| [`graphtier {name}`](#graphtier-{name}) | {_cell(summary)} |" for name, (_, summary) in COMMANDS.items()),
        "",
    ]
    for name in COMMANDS:
        command = cli.get_command(root, name)
        assert command is not None
        lines += _command_lines(command, click.Context(command, info_name=name, parent=root), 2)
    return "\n".join(lines) + "\n"
