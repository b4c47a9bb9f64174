"""The one Jinja2 environment factory: prompts (plain text) and HTML pages (autoescaped) are rendered by an
environment made here, with the same whitespace rules and ``StrictUndefined`` (a missing variable is an error,
never an empty string), and bundled templates are read from their package by one function."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

from .errors import ConfigError


def package_text(package: str, folder: str, name: str, *, what: str = "template") -> str:
    """The text of the bundled file ``<package>/<folder>/<name>`` (a :class:`ConfigError` naming ``what`` when
    it is not there)."""
    try:
        # one path part per joinpath call: Traversable.joinpath takes several only from Python 3.11
        return resources.files(package).joinpath(folder).joinpath(name).read_text(encoding="utf-8")
    except FileNotFoundError:
        where = package.replace(".", "/")
        raise ConfigError(f"no {what} {name!r} in {where}/{folder}") from None


def jinja_environment(*, package: str | None = None, folder: str = "templates", what: str = "template",
                      html: bool = False) -> Any:
    """A Jinja2 environment: ``trim_blocks``/``lstrip_blocks``, no trailing newline kept, ``StrictUndefined``.

    ``package`` (with ``folder``) loads ``get_template(name)`` from that package's bundled files; ``html=True``
    autoescapes every ``{{ value }}`` (mark trusted markup with ``|safe``). Prompts are plain text: no escaping."""
    import jinja2

    loader = None
    if package is not None:
        pkg = package

        def load(name: str) -> tuple[str, None, Any]:
            return package_text(pkg, folder, name, what=what), None, lambda: True

        loader = jinja2.FunctionLoader(load)
    return jinja2.Environment(
        loader=loader,
        autoescape=html,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        undefined=jinja2.StrictUndefined,
    )


@lru_cache(maxsize=1)
def text_environment() -> Any:
    """The shared environment for prompt text compiled from strings (no loader, no escaping)."""
    return jinja_environment()


__all__ = ["jinja_environment", "package_text", "text_environment"]
