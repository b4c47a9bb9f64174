"""The gold values of every TMDB task, as the fixtures gave them before the responses were made long.

``python tests/restbench_gold.py`` (with ``PYTHONPATH=src``) rewrites ``tests/data/restbench_tmdb_gold.json``;
:func:`gold_values` computes the same record from the service as it is now, so a test can compare the two
(padding a response must not change what any checker or solution script reads from it).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from taskbench.envs.restbench import RestBenchEnv, solve
from taskbench.envs.restbench.checking import resolve

GOLD = Path(__file__).parent / "data" / "restbench_tmdb_gold.json"
_VALUE_KEYS = ("all", "any", "of", "none", "yes", "picks", "over", "observed", "equals", "same_items", "includes", "one_of",
               "excludes", "below")


def gold_values(env: RestBenchEnv) -> dict[str, Any]:
    """Task id -> {"values": every checker VALUE resolved against the service, "answer": the solution's answer}."""

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        for task in env.tasks():
            checker = task.meta.get("checker") or []
            api = lambda op, args: env.api_call(op, args)  # noqa: E731
            values = [{key: resolve(cond[key], api=api, initial=None) for key in _VALUE_KEYS if key in cond}
                      for cond in checker]
            await env.reset(0, task)
            out[task.id] = {"values": values, "answer": await solve(env, task)}
        await env.aclose()
        return out

    return asyncio.run(main())


def environments(restbench_dir: Path, tmp: Path) -> list[RestBenchEnv]:
    """The TMDB environments whose gold is recorded: RestBench's 100 queries and our 20 tasks."""
    return [RestBenchEnv("tmdb", restbench_dir=restbench_dir, task_set="restbench"),
            RestBenchEnv("tmdb", restbench_dir=tmp, task_set="own")]


if __name__ == "__main__":  # pragma: no cover - a maintenance script
    import tempfile

    restbench = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/shared/reference/restbench")
    with tempfile.TemporaryDirectory() as tmp:
        record: dict[str, Any] = {}
        for env in environments(restbench, Path(tmp)):
            record.update(gold_values(env))
    GOLD.write_text(json.dumps(record, indent=0, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
