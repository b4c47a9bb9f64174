"""Tools offered to one model call: API-safe names, the tool choice, and checking the calls that come back.

:class:`ToolSet` is built by :meth:`taskbench.llm.Model.generate` from the ``tools`` and ``tool_choice`` it is
given. It names every tool with an API-safe alias (OpenAI-style APIs accept ``^[A-Za-z0-9_-]{1,64}$``; TaskBench
and RestBench tool names have spaces and slashes), translates history and answers between the two names, and
turns a provider's raw calls into :class:`~taskbench.schema.ToolCall` objects whose ``error`` says what is wrong
(unknown tool, arguments that are not a JSON object, arguments that do not fit the tool's JSON Schema, an answer
cut off at the token limit). Nothing here raises for a bad call: the caller feeds the error back to the model.
Pure, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError, suggest
from ..schema.chat import ToolCall, ToolSpec, api_names

TOOL_CHOICES = ("auto", "none", "required")
"""Tool choices besides naming one tool."""


def _validator(schema: Mapping[str, Any]) -> Any:
    """A jsonschema validator for ``schema``, or None when jsonschema is missing or the schema is invalid."""
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - a core dependency
        return None
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        return cls(schema)
    except Exception:  # a schema jsonschema cannot check: the call is passed through unchecked
        return None


def _first_error(validator: Any, value: Any) -> str | None:
    errors = sorted(validator.iter_errors(value), key=lambda e: (len(list(e.absolute_path)), e.message))
    if not errors:
        return None
    err = errors[0]
    where = "/".join(str(p) for p in err.absolute_path)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"arguments do not fit the tool's schema: {where + ': ' if where else ''}{err.message}{more}"


@dataclass
class ToolSet:
    """The tools of one call under their API-safe names, and the normalised tool choice."""

    specs: list[ToolSpec]
    choice: str
    """'auto' | 'none' | 'required' | the library name of the one tool that must be called."""
    to_api: dict[str, str] = field(default_factory=dict)
    from_api: dict[str, str] = field(default_factory=dict)
    _validators: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(cls, tools: Sequence[Any], tool_choice: Any = None) -> ToolSet:
        """Normalise ``tools`` (ToolSpec, Tool, OpenAI or MCP dicts) and ``tool_choice`` ('auto' (default),
        'none', 'required', a tool name, or ``{"type": "function", "function": {"name": ...}}``)."""
        specs = [ToolSpec.coerce(t) for t in tools]
        if not specs:
            raise ConfigError("tools=[] offers no tools; pass None for a call without tools")
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise ConfigError(f"two tools are called {dup!r}; tool names must be unique")
        aliases = api_names(names)
        to_api = dict(zip(names, aliases, strict=True))
        from_api = {a: n for n, a in to_api.items()}
        choice = cls._choice(tool_choice, names, from_api)
        return cls(specs=specs, choice=choice, to_api=to_api, from_api=from_api)

    @staticmethod
    def _choice(value: Any, names: list[str], from_api: dict[str, str]) -> str:
        if value is None:
            return "auto"
        if isinstance(value, Mapping):
            inner = value.get("function")
            fn: Mapping[str, Any] = inner if isinstance(inner, Mapping) else value
            value = fn.get("name")
        if not isinstance(value, str):
            raise ConfigError(f"tool_choice must be auto, none, required or a tool name, not {value!r}")
        if value in TOOL_CHOICES:
            return value
        if value in names:
            return value
        if value in from_api:
            return from_api[value]
        close = suggest(value, names)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"tool_choice {value!r} is not one of the offered tools{hint}")

    # ------------------------------------------------------------------------------------------ wire form

    def api_tools(self) -> list[dict[str, Any]]:
        """The tools in OpenAI's format under their API-safe names."""
        return [s.to_openai(self.to_api[s.name]) for s in self.specs]

    def api_choice(self) -> str | dict[str, Any]:
        """The tool choice in OpenAI's format."""
        if self.choice in TOOL_CHOICES:
            return self.choice
        return {"type": "function", "function": {"name": self.to_api[self.choice]}}

    def spec(self, name: str) -> ToolSpec | None:
        """The offered tool called ``name`` (library name), or None."""
        return next((s for s in self.specs if s.name == name), None)

    # ------------------------------------------------------------------------------------------ answers

    def parse_calls(self, raw: Sequence[Mapping[str, Any]], *, truncated: bool = False) -> list[ToolCall]:
        """Provider calls (``{"id", "name", "arguments"}``) -> checked :class:`ToolCall` objects.

        A call's ``name`` may be the API-safe alias or the library name. ``truncated``: the answer stopped at
        the token limit, so arguments that do not parse say so.
        """
        calls = []
        for i, item in enumerate(raw):
            api = str(item.get("name") or "")
            name = self.from_api.get(api, api)
            call_id = str(item.get("id") or f"call_{i}")
            args = item.get("arguments")
            text = args if isinstance(args, str) else json.dumps(args if args is not None else {}, ensure_ascii=False)
            calls.append(self._check(call_id, name, text, truncated))
        return calls

    def _check(self, call_id: str, name: str, text: str, truncated: bool) -> ToolCall:
        spec = self.spec(name)
        if spec is None:
            known = ", ".join(s.name for s in self.specs[:12])
            return ToolCall(id=call_id, name=name, raw_arguments=text,
                            error=f"no tool named {name!r} was offered (tools: {known})")
        try:
            parsed = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            why = "the answer was cut off at the token limit" if truncated else f"{exc.msg} at column {exc.colno}"
            return ToolCall(id=call_id, name=name, raw_arguments=text, error=f"arguments are not valid JSON ({why})")
        except RecursionError:
            return ToolCall(id=call_id, name=name, raw_arguments=text, error="arguments are nested too deeply")
        if not isinstance(parsed, dict):
            return ToolCall(id=call_id, name=name, raw_arguments=text,
                            error=f"arguments must be a JSON object, not {type(parsed).__name__}")
        if name not in self._validators:
            self._validators[name] = _validator(spec.parameters) if spec.parameters else None
        validator = self._validators[name]
        error = _first_error(validator, parsed) if validator is not None else None
        return ToolCall(id=call_id, name=name, arguments=parsed, raw_arguments=text, error=error)


__all__ = ["TOOL_CHOICES", "ToolSet"]
