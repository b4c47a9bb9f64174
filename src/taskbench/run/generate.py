"""`taskbench generate` as a library call: :class:`GenerateSpec` (the command's flags, its defaults and its
resume policy) and :func:`generate_spec` (this process, or sharded over an executor).

A directory remembers the arguments it was generated with: a spec that leaves an argument out takes the
recorded one (:meth:`GenerateSpec.resolved`), so ``generate_spec(GenerateSpec(output="gen/mm"))`` resumes a
generation as ``taskbench generate -o gen/mm`` does. ``method="executed"`` runs the executed-tasks engine
(:mod:`taskbench.engine.executed`) instead of Back-Instruct.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .executor import ExecutorSpec, check_executor, executor_scope

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.generate import GenerateOptions
    from ..records import RecordDisplay
    from ..schema import ToolGraph

EXECUTED = "executed"


def _size_weights(value: str | Mapping[Any, float] | None) -> dict[int, float] | None:
    from ..graph.sampling import parse_weights

    if value is None:
        return None
    if isinstance(value, Mapping):
        raw = dict(value)
    else:
        raw = parse_weights(value)
    try:
        return {int(k): float(v) for k, v in raw.items()}
    except ValueError:
        raise ConfigError(f"size weights need integer sizes, e.g. '2=1,3=1'; got {value!r}") from None


def _mode_weights(value: str | Mapping[str, float] | None) -> dict[str, float] | None:
    from ..graph.sampling import MODES, parse_weights

    if value is None or isinstance(value, Mapping):
        return None if value is None else {str(k): float(v) for k, v in value.items()}
    return parse_weights(value, MODES)


@dataclass(frozen=True)
class GenerateSpec:
    """Everything `taskbench generate` takes, with its defaults (see ``taskbench generate --help``); ``None``
    fields take the value the output directory recorded, else the default."""

    output: str | Path | None
    """Output directory (the reference layout); resumed if it exists."""
    tools: str | Path | None = None
    """A tool library (any registered format), a dataset directory or a bundled name; its graph is built."""
    graph: str | Path | None = None
    """A tool graph (graph_desc.json)."""
    n: int | None = None
    """Plan entries to generate (samples attempted)."""
    model: str | None = None
    seed: int | None = None
    """Plan seed (default 0)."""
    method: str | None = None
    """back-instruct (default), two-stage, no-edges, self-instruct, or executed (tasks over ``env``)."""
    mode_weights: str | Mapping[str, float] | None = None
    """single,chain,dag weights (default 3,7,8)."""
    size_weights: str | Mapping[int, float] | None = None
    """Tool-count weights for chain/dag (default the TaskBench weights)."""
    critic_model: str | None = None
    check: bool | None = None
    guided: bool | None = None
    keep: str = "both"
    dedup: str = "flag"
    dedup_threshold: float = 90.0
    concurrency: int = 1
    temperature: float | None = None
    """Sampling temperature (default 0.7, as the reference engine)."""
    top_p: float | None = None
    max_tokens: int | None = None
    """Most tokens per answer (default 2048; 120 for the executed method's request)."""
    cache: bool = True
    base_url: str | None = None
    critic_base_url: str | None = None
    api_key_env: str | None = None
    model_options: dict[str, Any] = field(default_factory=dict)
    env: str | None = None
    """An executable environment of the tools (its state in the prompt, every gold graph run in it)."""
    format: str = "auto"
    """Format of ``tools``."""
    dependency: str | None = None
    executor: ExecutorSpec | Any = field(default_factory=ExecutorSpec)
    """Where the plan entries run: this process, or sharded over Ray workers (the same directory)."""

    def resolved(self) -> GenerateSpec:
        """A copy with the recorded arguments of an existing output directory and the defaults filled, and the
        combinations checked (:class:`ConfigError` names what is missing or wrong)."""
        from ..engine.generate import read_manifest, weights_from_manifest
        from ..graph.sampling import MODE_WEIGHTS, SIZE_WEIGHTS

        if self.output is None:
            raise ConfigError("give --output DIR (the output directory)")
        out = Path(self.output)
        old = read_manifest(out) if out.is_dir() else None
        if self.method == EXECUTED or (self.method is None and old is not None and old.method == EXECUTED):
            return self._executed(old)
        spec = self
        if old is not None:  # resume: what is not given comes from the directory
            modes_old, sizes_old = weights_from_manifest(old)
            spec = replace(
                self, n=old.n if self.n is None else self.n, seed=old.seed if self.seed is None else self.seed,
                method=old.method if self.method is None else self.method,
                model=old.model if self.model is None else self.model,
                critic_model=old.critic_model if self.critic_model is None else self.critic_model,
                check=(True if "check" not in old.model_fields_set else old.check) if self.check is None else self.check,
                guided=(False if "guided" not in old.model_fields_set else old.guided)
                if self.guided is None else self.guided,
                temperature=old.temperature if self.temperature is None else self.temperature,
                top_p=old.top_p if self.top_p is None else self.top_p,
                max_tokens=old.max_tokens if self.max_tokens is None else self.max_tokens,
                mode_weights=modes_old if self.mode_weights is None else _mode_weights(self.mode_weights),
                size_weights=sizes_old if self.size_weights is None else _size_weights(self.size_weights),
            )
        else:
            spec = replace(self, mode_weights=_mode_weights(self.mode_weights) or dict(MODE_WEIGHTS),
                           size_weights=_size_weights(self.size_weights) or dict(SIZE_WEIGHTS))
        if spec.tools is not None and spec.graph is not None:
            raise ConfigError("give --tools or --graph, not both")
        if spec.tools is None and spec.graph is None and not (out / "graph_desc.json").is_file():
            raise ConfigError("give --tools FILE or --graph FILE (or --output a directory generated before, to "
                              "resume it)")
        if spec.n is None:
            raise ConfigError("give --n (how many samples to plan)")
        if spec.model is None:
            raise ConfigError("give --model (provider/model, e.g. llamacpp/qwen2.5-coder-0.5b)")
        spec.options()  # the choices (method, keep, dedup) checked now
        if check_executor(spec.executor) and spec.env is not None:
            raise ConfigError("--env runs every gold graph in one environment: use --executor local with it")
        return spec

    def _executed(self, old: Any) -> GenerateSpec:
        if self.tools is not None or self.graph is not None:
            raise ConfigError("--method executed reads the tools from --env (its graph is inferred): drop "
                              "--tools/--graph")
        spec = self
        if old is not None:  # resume: what is not given comes from the directory
            spec = replace(self, env=old.env if self.env is None else self.env, n=old.n if self.n is None else self.n,
                           model=old.model if self.model is None else self.model,
                           seed=old.seed if self.seed is None else self.seed,
                           temperature=old.temperature if self.temperature is None else self.temperature,
                           max_tokens=old.max_tokens if self.max_tokens is None else self.max_tokens)
        if spec.env is None:
            raise ConfigError("--method executed needs --env (restbench-tmdb, restbench-spotify, mcp:<command>, ...)")
        if spec.n is None:
            raise ConfigError("give --n (how many tasks to attempt)")
        if spec.model is None:
            raise ConfigError("give --model (the request writer, e.g. llamacpp/qwen2.5-coder-0.5b)")
        return replace(spec, method=EXECUTED)

    def options(self) -> GenerateOptions:
        """The Back-Instruct :class:`~taskbench.engine.generate.GenerateOptions` of a resolved spec (checked)."""
        from ..engine.generate import GenerateOptions

        assert self.n is not None
        options = GenerateOptions(
            n=self.n, seed=0 if self.seed is None else self.seed, method=self.method or "back-instruct",
            mode_weights=_mode_weights(self.mode_weights), size_weights=_size_weights(self.size_weights),
            check=True if self.check is None else self.check, guided=self.guided, keep=self.keep, dedup=self.dedup,
            dedup_threshold=self.dedup_threshold, concurrency=self.concurrency,
            temperature=0.7 if self.temperature is None else self.temperature,
            top_p=1.0 if self.top_p is None else self.top_p, max_tokens=self.max_tokens or 2048,
        )
        options.check_choices()
        return options

    def tool_graph(self) -> ToolGraph:
        """The tool graph of a resolved spec: ``graph``, the graph built from ``tools``, or the one the output
        directory holds."""
        from ..graph.build import graph_from_path, load_graph

        if self.graph is not None:
            return load_graph(self.graph, self.dependency)
        if self.tools is not None:
            from ..bundled import resolve

            return graph_from_path(resolve(self.tools), format=self.format, dependency=self.dependency)
        assert self.output is not None
        return load_graph(Path(self.output) / "graph_desc.json", self.dependency)


def generate_spec(spec: GenerateSpec, *, display: RecordDisplay | None = None) -> Any:
    """Generate into ``spec.output`` as `taskbench generate` does (resumable): a
    :class:`~taskbench.engine.generate.GenerateSummary`, or for ``method="executed"`` an
    :class:`~taskbench.engine.executed.ExecutedSummary`."""
    spec = spec.resolved()
    if spec.method == EXECUTED:
        return _executed(spec, display)
    graph = spec.tool_graph()
    options = spec.options()
    assert spec.model is not None and spec.output is not None
    with executor_scope(spec.executor) as runner:
        if runner is not None:  # sharded: each worker rebuilds the models from their configs
            from ..executors.generate import agenerate_sharded
            from ..llm.config import ModelConfig
            from ..records import run_sync

            config = ModelConfig.build(spec.model, concurrency=spec.concurrency, cache=spec.cache,
                                       base_url=spec.base_url, api_key_env=spec.api_key_env,
                                       options=dict(spec.model_options))
            critic_config = None if spec.critic_model is None else ModelConfig.build(
                spec.critic_model, concurrency=spec.concurrency, cache=spec.cache, base_url=spec.critic_base_url,
                api_key_env=spec.api_key_env, options=dict(spec.model_options))
            return run_sync(agenerate_sharded(graph, config, Path(spec.output), options, executor=runner,
                                              critic=critic_config, display=display))
        return _local(spec, graph, options, display)


def _local(spec: GenerateSpec, graph: ToolGraph, options: GenerateOptions, display: RecordDisplay | None) -> Any:
    from ..engine.generate import generate
    from ..predict.runner import open_model

    assert spec.model is not None and spec.output is not None
    model = open_model(spec.model, concurrency=spec.concurrency, cache=spec.cache, base_url=spec.base_url,
                       api_key_env=spec.api_key_env, options=dict(spec.model_options))
    critic = None
    if spec.critic_model is not None:
        critic = open_model(spec.critic_model, concurrency=spec.concurrency, cache=spec.cache,
                            base_url=spec.critic_base_url, api_key_env=spec.api_key_env,
                            options=dict(spec.model_options))
    environment = None
    if spec.env is not None:
        from ..envs import open_environment

        environment = open_environment(spec.env)
    try:
        return generate(graph, model, Path(spec.output), options, critic_model=critic, display=display,
                        close_model=True, env=environment)
    finally:
        if environment is not None:
            from ..records import run_sync

            run_sync(environment.aclose())


def _executed(spec: GenerateSpec, display: RecordDisplay | None) -> Any:
    """``--method executed``: calls first, the request last (:mod:`taskbench.engine.executed`)."""
    from ..engine.executed import ExecutedOptions, agenerate_executed
    from ..predict.runner import open_model
    from ..records import run_sync

    assert spec.model is not None and spec.n is not None and spec.env is not None and spec.output is not None
    if check_executor(spec.executor):
        raise ConfigError("--method executed runs in this process: drop --executor ray")
    options = ExecutedOptions(n=spec.n, seed=0 if spec.seed is None else spec.seed,
                              temperature=0.7 if spec.temperature is None else spec.temperature,
                              max_tokens=spec.max_tokens or 120, dedup_threshold=spec.dedup_threshold)
    model = open_model(spec.model, concurrency=spec.concurrency, cache=spec.cache, base_url=spec.base_url,
                       api_key_env=spec.api_key_env, options=dict(spec.model_options))
    try:
        return run_sync(agenerate_executed(spec.env, spec.output, model, options, concurrency=spec.concurrency,
                                           display=display))
    finally:
        model.close()


__all__ = ["GenerateSpec", "generate_spec"]
