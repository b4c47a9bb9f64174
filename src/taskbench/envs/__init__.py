"""Executable tool environments behind one protocol (:class:`Environment`), registered by name."""

from .base import Environment, known_environments, open_environment, register_environment

register_environment("restbench-tmdb", "taskbench.envs.restbench.env:open_tmdb")
register_environment("restbench-spotify", "taskbench.envs.restbench.env:open_spotify")

__all__ = ["Environment", "known_environments", "open_environment", "register_environment"]
