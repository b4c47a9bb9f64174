"""Compact ``--help``: options in two columns instead of typer's six.

typer's rich help gives every option six columns (long name, short name, secondary long, secondary short,
type, help), so at 80 columns the help text gets a third of the width and ``run --help`` ran to 291 lines. Here
each option is one cell of names (``-d, --data``, ``--plan / --graph-schema``) with its type where the type says
something (``<path>``, ``<int>``, a range; never ``<bool>``, ``<str>`` or ``<list[str]>``), and the help beside
it; below 100 columns the help goes under the names, indented, using the full width.

:func:`install` replaces typer's private ``rich_utils._print_options_panel`` when it exists with the
signature it has had since typer 0.12 (keyword-only ``name``, ``params``, ``ctx``, ``markup_mode``,
``console``); with a typer that lacks it, typer's own layout stays.

Help that lists what a registry holds (agents, metric families, tool-library formats) is written with a token,
e.g. ``"Format: {formats}."``; :func:`expand` fills the tokens from the registries (:data:`TOKENS`) when the
help is shown, so a plugin's agent, metric or format is listed, and a command that does not show its help never
imports a registry.
"""

from __future__ import annotations

from typing import Any

NARROW = 100
"""Below this terminal width the help text goes under the option names."""

TOKENS: dict[str, str] = {
    "{formats}": "taskbench.graph.formats:formats_help",
    "{format_titles}": "taskbench.graph.formats:titles_help",
    "{agents}": "taskbench.agents.registry:agents_help",
    "{metric_families}": "taskbench.eval.metrics:families_help",
    "{default_metrics}": "taskbench.eval.metrics:default_families_help",
    "{compare_metric_families}": "taskbench.eval.metrics:compare_families_help",
}
"""Help-text token -> ``"module:function"`` giving its text from a registry."""


def expand(text: str | None) -> str | None:
    """``text`` with every :data:`TOKENS` token replaced by what its registry holds now."""
    if not text or "{" not in text:
        return text
    import importlib

    for token, target in TOKENS.items():
        if token in text:
            module, _, name = target.partition(":")
            text = text.replace(token, getattr(importlib.import_module(module), name)())
    return text


def _type_text(param: Any, ctx: Any) -> str:
    if getattr(param, "is_flag", False) or getattr(param, "is_bool_flag", False):
        return ""
    try:
        text = param.display_type_rich(ctx=ctx)
    except Exception:  # pragma: no cover - a parameter typer cannot describe
        return ""
    if not isinstance(text, str):
        return ""
    if text.startswith("<list[") and text.endswith("]>"):
        text = f"<{text[6:-2]}>..."
    if text in ("<str>", "<bool>", "<str>..."):
        text = ""
    try:
        ranged = param._get_number_range_help_str()
    except Exception:  # pragma: no cover
        ranged = None
    if ranged:
        text = (text.replace(" range", "") + f" [{ranged}]").strip()
    return text


def _names(param: Any) -> str:
    from typer.core import TyperArgument

    if isinstance(param, TyperArgument):
        name = str(param.display_name_raw if hasattr(param, "display_name_raw") else param.name).upper()
        return name + ("..." if param.nargs != 1 else "")
    short = [o for o in param.opts if not o.startswith("--")]
    long = [o for o in param.opts if o.startswith("--")]
    names = ", ".join(short + long)
    if param.secondary_opts:
        names += " / " + ", ".join(param.secondary_opts)
    return names


def _print_options_panel(*, name: str, params: list[Any], ctx: Any, markup_mode: Any, console: Any) -> None:
    from rich import box
    from rich.console import Group
    from rich.padding import Padding
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text
    from typer import rich_utils

    if not params:
        return
    narrow = console.width < NARROW
    rows: list[Any] = []
    table = Table(show_header=False, box=None, pad_edge=False, padding=(0, 1), expand=True)
    table.add_column(ratio=None, no_wrap=False, max_width=34)
    table.add_column(ratio=1)
    for param in params:
        label = Text()
        if param.required:
            label.append("* ", style=rich_utils.STYLE_REQUIRED_SHORT)
        label.append(_names(param), style=rich_utils.STYLE_OPTION)
        kind = _type_text(param, ctx)
        if kind:
            label.append(" " + kind, style=rich_utils.STYLE_TYPES)
        if isinstance(getattr(param, "help", None), str):
            param.help = expand(param.help)
        help_text = rich_utils._get_parameter_help(param=param, ctx=ctx, markup_mode=markup_mode)
        if narrow:
            rows += [label, Padding(help_text, (0, 0, 0, 4))]
        else:
            table.add_row(label, help_text)
    body: Any = Group(*rows) if narrow else table
    console.print(Panel(body, border_style=rich_utils.STYLE_OPTIONS_PANEL_BORDER, title=name,
                        title_align=rich_utils.ALIGN_OPTIONS_PANEL, box=box.ROUNDED))


def install() -> None:
    """Use the compact panel in typer's rich help (a no-op where typer has no such hook)."""
    try:
        from typer import rich_utils
    except ImportError:  # pragma: no cover - typer without rich
        return
    if callable(getattr(rich_utils, "_print_options_panel", None)):
        rich_utils._print_options_panel = _print_options_panel  # type: ignore[assignment]
