"""Prompts for the model under test, rendered from the template files in ``predict/templates/``.

The templates are data (Jinja2 text files), written from the TaskBench paper's "Prompt for Inference" and the
reference scripts' two variants:

``resource.j2``  typed tools (Hugging Face, Multimedia): nodes refer to earlier outputs with ``<node-j>``
``temporal.j2``  tools with named parameters (Daily Life APIs): ``{name, value}`` arguments and explicit links
``plan_*.j2``    the same prompts asking for the step-aligned task plan (:mod:`taskbench.predict.plan`), which
                 structured output fills by default; demos are shown as plans too
``reformat_*.j2`` the ``--reformat`` repair request for an answer that did not parse

Everything here is pure: the same library, demos and request give the same text. The prompt is laid out so that
everything that does not depend on the sample (tool list, goal, requirements, demos) comes first and the user
request last, so backends that keep a KV cache of a shared prefix evaluate only each sample's own tokens.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from .._templates import package_text, text_environment
from ..errors import ConfigError, InputError
from ..schema import Sample, ToolLibrary

TEMPLATE_NAMES: dict[str, str] = {"resource": "resource.j2", "temporal": "temporal.j2"}
"""Inference template per dependency kind."""

PLAN_TEMPLATE_NAMES: dict[str, str] = {"resource": "plan_resource.j2", "temporal": "plan_temporal.j2"}
"""Inference template per dependency kind for the step-aligned task plan."""

REFORMAT_TEMPLATE_NAMES: dict[str, str] = {
    "resource": "reformat_resource.j2",
    "temporal": "reformat_temporal.j2",
}
"""Repair template per dependency kind."""


_TRIED: set[str] = set()
"""User templates that rendered once with a prompt's variables (:func:`load_template`)."""


@lru_cache(maxsize=32)
def _compile(source: str) -> Any:
    return text_environment().from_string(source)


@lru_cache(maxsize=32)
def template_text(name: str) -> str:
    """The text of a bundled template (e.g. ``"resource.j2"``); read once per process (reading it for every
    prompt was a tenth of a structured prediction's client CPU at the released size)."""
    return package_text("taskbench.predict", "templates", name, what="prompt template")


def load_template(
    template: str | Path | None, dependency: str, *, reformat: bool = False, plan: bool = False
) -> str:
    """Template source: a user file when ``template`` is a path, else the bundled one for ``dependency``
    (the plan variant with ``plan``)."""
    if template is not None:
        from ..dataset.jsonio import check_input_file

        path = Path(template)
        check_input_file(path)
        try:
            source = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError("prompt template not found", path=path) from None
        except IsADirectoryError:
            raise InputError("the prompt template is a directory, not a file", path=path) from None
        except UnicodeDecodeError:
            raise InputError("the prompt template is not UTF-8 text (give a Jinja2 text file)", path=path) from None
        import jinja2

        try:
            _compile(source)
        except jinja2.TemplateSyntaxError as exc:
            raise InputError(f"not a Jinja2 template: {exc.message}", path=path, line=exc.lineno) from None
        if source not in _TRIED:
            # a trial render with a prompt's variables, so one that fails whatever the data fails before anything
            # is written (what fails on one sample's data only is stopped at that sample by _render)
            _render(source, template, tools=['{"id": "Tool"}'], illegal_result="{}", user_request="a request",
                    demos=[{"user_request": "a request", "result": "{}"}])
            _TRIED.add(source)
        return source
    names = REFORMAT_TEMPLATE_NAMES if reformat else PLAN_TEMPLATE_NAMES if plan else TEMPLATE_NAMES
    if dependency not in names:
        raise ConfigError(f"unknown dependency kind {dependency!r}; expected one of {sorted(names)}")
    return template_text(names[dependency])


def tool_entry(tool: Any, dependency: str) -> dict[str, Any]:
    """One tool as the prompt shows it: id, description and, per dependency kind, types or parameter names
    (the reference scripts show temporal tools' parameters as a list of names)."""
    return _entry(_tool_key(tool), dependency)


def _tool_key(tool: Any) -> tuple[Any, ...]:
    return (tool.id, tool.desc, tuple(tool.input_types or ()), tuple(tool.output_types or ()),
            tuple(p.name for p in tool.parameters or ()))


def _entry(key: tuple[Any, ...], dependency: str) -> dict[str, Any]:
    tool_id, desc, inputs, outputs, params = key
    entry: dict[str, Any] = {"id": tool_id, "desc": desc}
    if dependency == "temporal":
        entry["parameters"] = list(params)
    else:
        entry["input-type"] = list(inputs)
        entry["output-type"] = list(outputs)
    return entry


def tool_lines(library: ToolLibrary) -> list[str]:
    """The tool list, one compact JSON object per tool, in library order (every prompt of a dataset shows the
    same list: it is rendered once per distinct library)."""
    return list(_tool_lines(library.dependency, tuple(_tool_key(t) for t in library.tools)))


@functools.lru_cache(maxsize=32)
def _tool_lines(dependency: str, tools: tuple[tuple[Any, ...], ...]) -> tuple[str, ...]:
    return tuple(json.dumps(_entry(key, dependency), ensure_ascii=False) for key in tools)


def demo_result(sample: Sample, dependency: str) -> dict[str, Any]:
    """The gold answer of a demo sample as the prompt shows it (links only for temporal domains)."""
    graph = sample.graph
    out: dict[str, Any] = {
        "task_steps": list(graph.task_steps),
        "task_nodes": [n.model_dump(mode="json") for n in graph.task_nodes],
    }
    if dependency == "temporal":
        out["task_links"] = [lk.model_dump(mode="json") for lk in graph.task_links]
    return out


def render_prompt(
    library: ToolLibrary,
    user_request: str,
    demos: Sequence[Sample] = (),
    *,
    template: str | Path | None = None,
    plan: bool = False,
) -> str:
    """The full inference prompt for one request (pure). ``plan``: ask for the step-aligned task plan and
    show the demos as plans (:mod:`taskbench.predict.plan`)."""
    from .plan import sample_plan

    dependency = library.dependency
    source = load_template(template, dependency, plan=plan)
    views = [
        {
            "user_request": d.user_request,
            "result": json.dumps(
                sample_plan(d, library) if plan else demo_result(d, dependency), ensure_ascii=False
            ),
        }
        for d in demos
    ]
    return _render(source, template, tools=tool_lines(library), demos=views, user_request=user_request)


def _render(source: str, template: str | Path | None, **context: Any) -> str:
    """``source`` rendered with ``context``; a user's template that fails while rendering (an undefined
    attribute, a filter given the wrong type, a division by zero) is one :class:`InputError` naming the file,
    which stops the run instead of failing every sample the same way."""
    try:
        return str(_compile(source).render(**context)).strip()
    except Exception as exc:
        if template is None:  # a bundled template: a bug of ours, not the user's input
            raise
        why = " ".join(str(exc).split())[:300] or type(exc).__name__
        raise InputError(f"the prompt template fails while rendering ({type(exc).__name__}: {why})",
                         path=template, hint="fix the template") from None


def build_messages(
    library: ToolLibrary,
    user_request: str,
    demos: Sequence[Sample] = (),
    *,
    template: str | Path | None = None,
    plan: bool = False,
) -> list[dict[str, str]]:
    """Chat messages for one request: a single user turn holding the whole prompt, as the reference does."""
    return [{"role": "user", "content": render_prompt(library, user_request, demos, template=template, plan=plan)}]


def render_reformat(dependency: str, illegal_result: str, *, template: str | Path | None = None) -> str:
    """The repair prompt that asks a model to rewrite an unparseable answer as strict JSON (pure)."""
    source = load_template(template, dependency, reformat=True)
    return _render(source, template, illegal_result=illegal_result)


__all__ = [
    "PLAN_TEMPLATE_NAMES",
    "REFORMAT_TEMPLATE_NAMES",
    "TEMPLATE_NAMES",
    "build_messages",
    "demo_result",
    "load_template",
    "render_prompt",
    "render_reformat",
    "template_text",
    "tool_entry",
    "tool_lines",
]
