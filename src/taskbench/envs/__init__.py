"""Executable tool environments behind one protocol (:class:`Environment`), registered by name."""

from .base import Environment, known_environments, open_environment, register_environment

register_environment("restbench-tmdb", "taskbench.envs.restbench.env:open_tmdb")
register_environment("restbench-spotify", "taskbench.envs.restbench.env:open_spotify")
# executable TaskBench domains (artifacts with provenance; the daily-life world) and any MCP server
register_environment("taskbench-huggingface", "taskbench.envs.taskbench_exec.env:huggingface")
register_environment("taskbench-multimedia", "taskbench.envs.taskbench_exec.env:multimedia")
register_environment("taskbench-dailylifeapis", "taskbench.envs.taskbench_exec.env:dailylifeapis")
register_environment("mcp", "taskbench.envs.mcp:MCPEnvironment")

__all__ = ["Environment", "known_environments", "open_environment", "register_environment"]
