"""Exceptions raised by taskbench.

The tree (catch the narrowest one you can handle)::

    TaskbenchError                 base of everything taskbench raises on purpose
    ├── InputError                 a user-supplied file or value is wrong (bad JSON, missing field, unknown tool,
    │   │                          duplicate id, ...). Carries ``path`` and ``line`` when known. The CLI prints
    │   │                          it as one line ``path:line: message (hint)`` and exits with code 2.
    │   └── SchemaError            a record parsed as JSON but does not fit the data model
    ├── ConfigError                a bad option combination or unknown name (provider, metric, split, ...)
    │   └── UnreachableError       nothing listens at the model's --base-url (connection refused before any
    │                              answer): stops the whole command at once instead of failing every call
    ├── MissingDependencyError     an optional package is not installed; the message holds the exact
    │                              ``pip install`` line
    ├── ModelError                 a model call failed for good (after the retry budget was spent)
    │   ├── ModelRefusedError      the model answered, but its output could not be used (e.g. not JSON)
    │   │   └── llm.schemas.JSONExtractionError  no JSON in a text (also a ``ValueError``); ``llm.model``
    │   │                          records it as the answer's parse error, ``llm.extract_json`` raises it
    │   ├── llm.base.TransientProviderError  one attempt failed in a retryable way (rate limit, 5xx, reset);
    │   │                          ``llm.retry`` retries it and raises a plain :class:`ModelError` when the
    │   │                          budget is spent, so it never reaches a caller of ``Model``
    │   └── llm.providers.pool.NoEndpointLeft  every replica of an endpoint pool failed; the openai provider
    │                              turns it into a ``TransientProviderError``
    ├── envs.restbench.service.ApiError  a simulated API's HTTP error; the service answers it as the API's
    │                              own error body and status
    └── SandboxError               the code sandbox broke (its supervisor could not start or answer)
        └── SandboxUnavailableError  no sandbox can be had here (no bwrap, no user namespaces, ...): agent code
                                   is refused rather than run unconfined, unless the caller passes
                                   ``unsafe_local=True`` (CLI ``--unsafe-local``); one line with the fix

Library code raises these and never prints; the CLI (``taskbench.cli``) turns them into one line on stderr
and exit code 2 (user errors, a refused sandbox) or 1 (model failures); a broken sandbox exits with 4.

Outside the tree on purpose: control-flow signals private to one module, raised and caught there
(``agents.episode.StepCap``, ``envs.restbench.checking.ScriptError``, ``envs.taskbench_exec.env._CallError``,
``eval.compat._Dropped``), and the sandbox supervisor's (``envs.sandbox._child``, the run's process: it runs
inside the sandbox and imports nothing of taskbench). ``tests/test_one_of_each.py`` lists them, so a new class
outside the tree is a decision, not an accident.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "TaskbenchError",
    "InputError",
    "SchemaError",
    "ConfigError",
    "UnreachableError",
    "ContextLengthError",
    "MissingDependencyError",
    "ModelError",
    "ModelRefusedError",
    "SandboxError",
    "SandboxUnavailableError",
    "did_you_mean",
    "options_error",
    "suggest",
    "validation_message",
]


class TaskbenchError(Exception):
    """Base class of every error taskbench raises on purpose."""

    exit_code = 1


class InputError(TaskbenchError):
    """A user-supplied input is wrong.

    ``str(err)`` is a single line: ``path:line: message (hint)``, where the parts that are unknown are left out.
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path + (f":{self.line}" if self.line is not None else "")
            where += ": "
        text = where + " ".join(self.message.split())
        if self.hint:
            text += f" ({' '.join(self.hint.split())})"
        return text

    def at(self, path: str | Path | None = None, line: int | None = None) -> InputError:
        """Return a copy of this error located at ``path:line`` (keeps what is already known)."""
        return type(self)(
            self.message,
            path=self.path if self.path is not None else path,
            line=self.line if self.line is not None else line,
            hint=self.hint,
        )


class SchemaError(InputError):
    """A record is valid JSON but does not fit the taskbench data model."""


class ConfigError(TaskbenchError):
    """A bad option, option combination or unknown name."""

    exit_code = 2


class UnreachableError(ConfigError):
    """Nothing listens at a model server's URL and it never answered: the whole command stops (every other call
    would fail the same way), so runners re-raise it instead of recording a failed item."""


class ContextLengthError(ConfigError):
    """A prompt does not fit the model's context window. A command stops on it like on any bad option; an agent
    episode ends on it as on a cap (``stop="context_full"``: a history the model can no longer read is the
    agent's failure, not a crash of the run)."""


class MissingDependencyError(TaskbenchError):
    """An optional dependency is missing; the message holds the exact install command."""

    exit_code = 2

    def __init__(self, package: str, extra: str | None = None, purpose: str | None = None) -> None:
        self.package = package
        self.extra = extra
        install = f'pip install "taskbench[{extra}]"' if extra else f"pip install {package}"
        what = f" (needed for {purpose})" if purpose else ""
        super().__init__(f"the optional package '{package}' is not installed{what}; run: {install}")


class ModelError(TaskbenchError):
    """A model call failed for good, after retries."""

    exit_code = 1


class ModelRefusedError(ModelError):
    """The model answered but its output could not be used."""


class SandboxError(TaskbenchError):
    """The sandbox that runs agent code failed (not the code: the machinery around it)."""

    exit_code = 4


class SandboxUnavailableError(SandboxError):
    """Agent code cannot be confined here, so it is not run (pass ``unsafe_local=True`` to run it anyway)."""

    exit_code = 2

    def __init__(self, reason: str) -> None:
        self.reason = " ".join(reason.split())
        super().__init__(
            f"no sandbox for agent code here: {self.reason}; refusing to run it unconfined "
            "(pass --unsafe-local / unsafe_local=True to run it anyway, without confinement)"
        )


# --------------------------------------------------------------------------------------------- helpers


def suggest(name: object, choices: Iterable[object], *, n: int = 1, cutoff: float = 0.6) -> list[str]:
    """The ``choices`` closest to ``name`` (case-insensitive, difflib's ratio >= ``cutoff``), best first: the
    one did-you-mean helper (every "did you mean" hint of the package comes from here)."""
    import difflib

    options = [str(c) for c in choices]
    if not isinstance(name, str) or not options:
        return []
    by_lower: dict[str, str] = {}
    for c in options:
        by_lower.setdefault(c.lower(), c)
    exact = by_lower.get(name.lower())
    if exact is not None and exact != name:
        return [exact]
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=cutoff)
    if not close:  # a prefix or a part of a name ("chain" -> "chain_overall")
        close = [c for c in by_lower if c.startswith(name.lower()) or (len(name) >= 3 and name.lower() in c)][:n]
    return [by_lower[c] for c in close]


def did_you_mean(name: object, choices: Iterable[object], *, listing: int = 12) -> str:
    """A hint for an unknown ``name``: ``"did you mean 'x'?"`` when one choice is close, followed by the
    choices (the first ``listing`` of them) - e.g. ``"did you mean 'resource'? (one of: resource, temporal)"``."""
    options = list(dict.fromkeys(str(c) for c in choices))
    close = suggest(name, options)
    shown = ", ".join(options[:listing]) + (f", ... ({len(options)} in all)" if len(options) > listing else "")
    if close:
        return f"did you mean {close[0]!r}? one of: {shown}" if options else f"did you mean {close[0]!r}?"
    return f"one of: {shown}" if options else "no names to choose from"


def validation_message(exc: Any, *, max_parts: int = 6) -> str:
    """The first error of a pydantic ``ValidationError`` as ``loc: message`` on one line; a location deeper
    than ``max_parts`` (hostile nesting) is shortened in the middle, a long message is cut."""
    try:
        errors = exc.errors()
    except Exception:  # anything that is not a ValidationError
        return " ".join(str(exc).split())[:300]
    if not errors:
        return " ".join(str(exc).split())[:300]
    err = errors[0]
    parts = [str(p) for p in err.get("loc", ())]
    if len(parts) > max_parts:
        parts = parts[:3] + [f"...({len(parts) - 5} levels)..."] + parts[-2:]
    loc = ".".join(parts)
    msg = " ".join(str(err.get("msg", "")).split())
    msg = msg.removeprefix("Value error, ")
    if len(msg) > 300:
        msg = msg[:300] + "..."
    return f"{loc}: {msg}" if loc else msg


def options_error(exc: Any) -> ConfigError:
    """A pydantic ``ValidationError`` of an options model built from command-line flags (``PredictOptions``,
    ...) as one :class:`ConfigError` line that names the flag: ``--max-tokens: Input should be greater than or
    equal to 16``."""
    try:
        errors = exc.errors()
    except Exception:  # not a ValidationError
        return ConfigError(validation_message(exc))
    if not errors:
        return ConfigError(validation_message(exc))
    loc = [str(p) for p in errors[0].get("loc", ())]
    msg = " ".join(str(errors[0].get("msg", "")).split()).removeprefix("Value error, ")[:300]
    flag = "--" + loc[0].replace("_", "-") if loc else "an option"
    return ConfigError(f"{flag}: {msg}")
