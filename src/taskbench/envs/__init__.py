"""Executable tool environments behind one protocol (:class:`Environment`), registered by name."""

from .base import Environment, known_environments, open_environment, register_environment

__all__ = ["Environment", "known_environments", "open_environment", "register_environment"]
