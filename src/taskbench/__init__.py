"""taskbench: turn a tool library into a task-automation benchmark, score LLMs on it, run tool-use agents.

The public API is what ``__all__`` lists (``from taskbench import load_dataset, build_graph, get_model, ...``);
everything else is internal and may change. Names are imported on first use, so ``import taskbench`` and the
command line start fast.

The flow: ``load_tools`` -> ``make_graph`` (rules, or links inferred from the tools) -> ``sample_plan`` -> ``generate``
-> Sample (gold TaskGraph) -> ``get_model`` +
``predict_dataset`` -> Prediction -> ``evaluate`` -> report (``run_benchmark`` does it end to end); agents in an
environment: ``run_agents(AgentEvalConfig(...))`` -> trajectories -> agent metrics.

``evaluate("multimedia", "preds.jsonl")`` is ``taskbench evaluate --data multimedia --predictions preds.jsonl``
with the same defaults (``EvaluateSpec`` holds them; ``ExecutorSpec("ray")`` shards it), and
``run_benchmark(RunSpec())`` is ``taskbench run``.
"""

from __future__ import annotations

from ._lazy import lazy_exports
from .errors import (
    ConfigError,
    InputError,
    MissingDependencyError,
    ModelError,
    SandboxError,
    SandboxUnavailableError,
    SchemaError,
    TaskbenchError,
)

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    # the data model
    "Prediction": "schema",
    "RunLog": "schema",
    "SampledSubgraph": "schema",
    "Sample": "schema",
    "TaskArgument": "schema",
    "TaskGraph": "schema",
    "TaskLink": "schema",
    "TaskNode": "schema",
    "LinkReason": "schema",
    "Tool": "schema",
    "ToolGraph": "schema",
    "ToolLibrary": "schema",
    "ToolLink": "schema",
    "ToolParameter": "schema",
    "Usage": "schema",
    # datasets on disk
    "Dataset": "dataset",
    "load_dataset": "dataset",
    "read_samples": "dataset",
    "save_dataset": "dataset",
    # tool libraries and graphs
    "build_graph": "graph",
    "edit_graph": "graph",
    "graph_stats": "graph",
    "infer_graph": "graph",
    "load_tools": "graph",
    "make_graph": "graph",
    "render_html": "graph",
    "render_png": "graph",
    "sample_plan": "graph",
    # the data engine and its critics
    "check_sample": "engine",
    "GenerateOptions": "engine",
    "generate": "engine",
    # models
    "GenerationConfig": "llm",
    "Model": "llm",
    "get_model": "llm",
    # predictions, evaluation, the main job
    "PredictOptions": "predict",
    "predict_dataset": "predict",
    "evaluate": "run.evaluate",
    "EvaluateSpec": "run.evaluate",
    "ExecutorSpec": "run.executor",
    "evaluate_compat": "eval",
    "compare_predictions": "eval.api",
    "run_benchmark": "run",
    # agents in environments
    "AgentEvalConfig": "agents",
    "run_agents": "agents",
    # the sandbox for agent-written code
    "Sandbox": "envs.sandbox",
    "SandboxLimits": "envs.sandbox",
    "SandboxResult": "envs.sandbox",
    "run_code": "envs.sandbox",
}

__all__ = [
    "ConfigError",
    "InputError",
    "MissingDependencyError",
    "ModelError",
    "SandboxError",
    "SandboxUnavailableError",
    "SchemaError",
    "TaskbenchError",
    "__version__",
    *sorted(_LAZY),
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

