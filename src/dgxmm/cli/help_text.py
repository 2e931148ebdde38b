"""How a command's ``--help`` reads: plain words for a terminal.

Typer marks every value with its Python type (``<str>``, ``<bool>`` even for a flag), and a
docstring's reStructuredText quotes (````dgxmm jobs enable````) reach the screen as they are.
``PlainCommand`` says what a value is as click does (``TEXT``, ``PATH``, ``on|off``), marks
no flag, and drops the double backticks.
"""

from __future__ import annotations

from typer._click import Context, Parameter  # typer's own click, which its commands use
from typer.core import TyperArgument, TyperCommand, TyperOption

__all__ = ["PlainCommand"]

# Typer's type names, as click's help names them.
_MARKS = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "bool": ""}


class PlainCommand(TyperCommand):
    """A command whose help names each value's kind, marks no flag, and quotes no RST."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        if self.help:
            self.help = self.help.replace("``", "")

    def get_params(self, ctx: Context) -> list[Parameter]:
        """Return the parameters, each with the mark its help shows."""
        params = super().get_params(ctx)
        for param in params:
            if isinstance(param, TyperOption) and param.metavar is None:
                param.metavar = _mark(param, ctx)
            elif isinstance(param, TyperArgument) and param.name:
                # An argument is shown by its name (NAME); Typer's type column beside it
                # reads the type, not the mark, so it is told the mark: the choices, or none.
                choices = _mark(param, ctx)
                param.metavar = param.metavar or param.name.upper()
                shown = choices if "|" in choices else None
                setattr(param, "display_type_rich", lambda ctx, shown=shown: shown)  # noqa: B010
        return params


def _mark(param: TyperArgument | TyperOption, ctx: Context) -> str:
    if isinstance(param, TyperOption) and (param.is_flag or param.count):
        return ""  # a flag takes no value
    shown = param.display_type(ctx).strip("<>")
    if "|" in shown:
        return shown  # the choices: on|off
    if shown.startswith("list[") and shown.endswith("]"):
        shown = shown[len("list[") : -1]  # an option given again for each value
    return _MARKS.get(shown, shown.upper())
