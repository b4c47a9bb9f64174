"""A trajectory, readably: rich renderables built from a :class:`~taskbench.schema.Trajectory` (the CLI prints
them; nothing here prints).

Each event is one block: a model call (role, model, tokens, the answer: a plan, a verdict, code or text; with
``full=True`` also the prompt), a tool call (arguments and result), a code run (the code, highlighted, and what
it gave), a review verdict (accept or revise, route, feedback), the final answer; then the environment's
verdict and the totals.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from ..schema import (
    CodeRunEvent,
    FinalAnswerEvent,
    ModelCallEvent,
    ReviewEvent,
    ToolCallEvent,
    Trajectory,
)
from ..schema.episode import EpisodeRow, FailedEpisodeRow, parse_episode

ROLE_STYLE = {"grounding": "cyan", "execution": "green", "review": "magenta", "react": "blue", "code": "green",
              "planner": "cyan"}


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" ... [{len(text) - limit} more characters]"


def header(traj: Trajectory) -> RenderableType:
    """Task, agent, models, seed, offered tools, gold path, verdict."""
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold")
    table.add_column()
    table.add_row("task", f"{traj.id}: {traj.task}")
    table.add_row("agent", f"{traj.agent or '?'}  (env {traj.env or '?'}, seed {traj.seed})")
    if traj.models:
        table.add_row("models", ", ".join(f"{r}={m}" for r, m in traj.models.items()))
    table.add_row("tools", f"{len(traj.tools)} offered: " + ", ".join(t.name for t in traj.tools[:12])
                  + (" ..." if len(traj.tools) > 12 else ""))
    table.add_row("gold path", " -> ".join(traj.gold_path) or "(none)")
    if traj.config:
        table.add_row("config", ", ".join(f"{k}={v}" for k, v in traj.config.items() if v is not None))
    return Panel(table, title="trajectory", border_style="bold")


def _answer_text(e: ModelCallEvent) -> RenderableType:
    out = e.output
    parts: list[RenderableType] = []
    text = out.content or ""
    if text.strip().startswith("{"):
        try:
            text = json.dumps(json.loads(text), ensure_ascii=False, indent=1)
        except json.JSONDecodeError:
            pass
    if text:
        parts.append(Text(_clip(text, 1500)))
    for call in out.tool_calls:
        args = json.dumps(call.arguments, ensure_ascii=False)
        parts.append(Text(f"-> call {call.name}({_clip(args, 300)})" + (f"  [invalid: {call.error}]"
                                                                         if call.error else ""), style="yellow"))
    return Group(*parts) if parts else Text("(empty answer)", style="dim")


def event_block(e: Any, *, full: bool = False) -> RenderableType:
    """One event as a renderable."""
    if isinstance(e, ModelCallEvent):
        style = ROLE_STYLE.get(e.role, "white")
        tokens = f"{e.usage.prompt_tokens}+{e.usage.completion_tokens} tok, {e.latency:.2f} s"
        title = f"[{style}]{escape(e.role)}[/] · {escape(e.model)} · {tokens}" + (" · cached" if e.cached else "")
        body: list[RenderableType] = []
        if full:
            for m in e.messages:
                body.append(Text(f"[{m.role}]", style="dim bold"))
                body.append(Text(_clip(str(getattr(m, "content", "") or ""), 4000), style="dim"))
        body.append(_answer_text(e))
        if e.error:
            body.append(Text(f"failed turn: {e.error}", style="red"))
        return Panel(Group(*body), title=title, title_align="left", border_style=style)
    if isinstance(e, ToolCallEvent):
        args = json.dumps(e.call.arguments, ensure_ascii=False)
        result = e.result.text()
        style = "red" if e.result.error else "yellow"
        return Panel(Text(f"{e.call.name}({_clip(args, 300)})\n= {_clip(result, 800)}"),
                     title=f"tool call · {e.seconds:.2f} s" + (f" · HTTP {e.result.status}" if e.result.status else ""),
                     title_align="left", border_style=style)
    if isinstance(e, CodeRunEvent):
        parts: list[RenderableType] = [Syntax(e.code or "# (no code)", "python", line_numbers=True,
                                              word_wrap=True)]
        if e.stdout:
            parts.append(Text("stdout: " + _clip(e.stdout.rstrip(), 600), style="dim"))
        if e.error is not None:
            where = f" line {e.error.line}" if e.error.line else ""
            parts.append(Text(f"error{where}: {e.error.type}: {_clip(e.error.message, 600)}", style="red"))
        else:
            parts.append(Text("result = " + _clip(json.dumps(e.result, ensure_ascii=False), 600), style="green"))
        calls = ", ".join(e.tool_calls) or "none"
        return Panel(Group(*parts), title=f"code run · {e.seconds:.2f} s · calls: {calls}", title_align="left",
                     border_style="red" if e.error else "green")
    if isinstance(e, ReviewEvent):
        style = "green" if e.verdict == "accept" else "red"
        route = f" -> {e.route}" if e.route else ""
        return Text(f"review of the {e.target}: {e.verdict}{route}" + (f": {e.feedback}" if e.feedback else ""),
                    style=style)
    if isinstance(e, FinalAnswerEvent):
        return Panel(Text(e.answer or "(empty)"), title=f"final answer · {e.role}", title_align="left",
                     border_style="bold green")
    return Text(repr(e))  # pragma: no cover - every event kind is handled above


def footer(traj: Trajectory) -> RenderableType:
    """Status, the environment's verdict and the totals."""
    t = traj.totals
    lines = [f"status {traj.status}" + (f" ({escape(traj.error)})" if traj.error else "")]
    if traj.outcome is not None:
        verdict = "[green]success[/]" if traj.outcome.success else "[red]failure[/]"
        lines.append(f"{verdict}: {escape(traj.outcome.reason)}")
        lines.append("calls: " + (escape(" -> ".join(traj.called_tools())) or "(none)"))
    lines.append(f"{t.turns} turns, {t.model_calls} model calls, {t.reviews} reviews, {t.code_runs} code runs, "
                 f"{t.tool_calls} tool calls, {t.usage.prompt_tokens + t.usage.completion_tokens:,} tokens, "
                 f"{t.seconds:.1f} s")
    return Panel(Text.from_markup("\n".join(lines)), title="outcome", border_style="bold")


def render(traj: Trajectory, *, full: bool = False) -> RenderableType:
    """The whole trajectory."""
    return Group(header(traj), *(event_block(e, full=full) for e in traj.events), footer(traj))


def run_table(records: Iterable[EpisodeRow | FailedEpisodeRow | Mapping[str, Any]],
              agents: Sequence[str] | None = None) -> Table:
    """The episodes of a run directory: agent, task, seed, success, stop, calls, tokens (for picking one).
    ``records``: rows, or lines of ``episodes.jsonl`` as read (parsed here)."""
    table = Table(title="episodes", show_lines=False)
    for col in ("agent", "task", "seed", "success", "stop", "calls", "tokens"):
        table.add_column(col, justify="right" if col in ("seed", "calls", "tokens") else "left")
    for line in records:
        rec = parse_episode(line) if isinstance(line, Mapping) else line
        if agents and rec.agent not in agents:
            continue
        if isinstance(rec, FailedEpisodeRow):
            table.add_row(escape(str(rec.agent)), escape(str(rec.task)), str(rec.seed),
                          "[red]failed[/]", escape(_clip(rec.error, 40)), "", "")
            continue
        table.add_row(escape(rec.agent), escape(rec.task), str(rec.seed),
                      "[green]yes[/]" if rec.success else "no", escape(rec.stop),
                      str(len(rec.calls)), f"{rec.tokens:,}")
    return table


__all__ = ["event_block", "footer", "header", "render", "run_table"]
