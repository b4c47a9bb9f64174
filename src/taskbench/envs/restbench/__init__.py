"""Offline RestBench: the TMDB and Spotify APIs served on loopback from our fixtures, RestBench's queries with
checkers, and our own task set (see docs/environments.md).

``open_environment("restbench-tmdb")`` / ``open_environment("restbench-spotify")`` give a
:class:`RestBenchEnv`; :func:`solve` runs a task's solution script through it.
"""

from .dataset import find_restbench_dir, load_queries, normalize_path, query_hash
from .env import RestBenchEnv, open_spotify, open_tmdb, path_scores, solve

__all__ = [
    "RestBenchEnv",
    "find_restbench_dir",
    "load_queries",
    "normalize_path",
    "open_spotify",
    "open_tmdb",
    "path_scores",
    "query_hash",
    "solve",
]
