"""``taskbench generate``: the Back-Instruct data engine, from a tool graph to a benchmark directory.

The flow, one plan entry at a time::

    plan entry (graph/sampling) -> prompt (engine/prompts + templates) -> Model.generate(schema=...)
        -> GenerationRecord in data_raw.json (the one runner) -> Sample + critics (engine/output) -> data.json ...

- **The plan** is the seeded, prefix-stable sampling plan (:func:`taskbench.graph.sampling.sample_plan`, modes
  3:7:8 and the paper's size weights unless overridden). Entry *i* is sample id ``f"{i:05d}"``; its generation
  seed (in the prompt and sent to the backend) is drawn from ``(seed, i)`` alone.
- **Methods**: ``back-instruct`` (one call: steps, request, invocation graph and ``check_by_teacher``, as the
  released engine), ``two-stage`` (the paper's equations 1 and 2: the request from the subgraph, then steps and
  graph from the subgraph and the request), ``no-edges`` (back-instruct without the edges) and
  ``self-instruct`` (the whole library; the model picks the tools; the plan fixes only size and structure).
- **Constrained answers** (:mod:`taskbench.engine.schemas`); an answer that hit the token limit is recorded as a
  failed attempt (``error_code: truncated``), never repaired into a sample.
- **Crash safety, resume, concurrency** come from :func:`taskbench.records.run_records`: one fsynced line per
  plan entry in plan order, a file lock, a model call that failed for good written in place
  (``"failed": true``) and retried by the next run. Rerunning with the same arguments generates only the
  entries not done yet.
- **An executable environment** (``env``, ``generate --env mcp:...``): its state is read once per run
  (``env_state.txt``) and shown in every prompt, and every answered sample's gold graph is run in it, one at a
  time (:mod:`taskbench.engine.execcheck`); a graph that fails is rejected by the ``exec`` critic with the
  failing call's error.
- **The directory remembers its arguments** (its run header, ``header.json``, :mod:`taskbench.dataset.header`): a rerun with another seed, method, model,
  critic, weights, sampling settings or tool graph is refused (use another ``--out``); a larger ``--n``
  extends the plan (entries 0..n-1 are the same for any n), a smaller one is refused. ``--keep`` and
  ``--dedup`` only filter, so they may change freely: the output files are rewritten from ``data_raw.json``
  without a model call.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import __version__
from ..dataset.header import HEADER_FILE, check_resume, new_header, read_header, write_header
from ..dataset.jsonio import make_directory, write_json
from ..dataset.layout import GRAPH_FILE, RAW_FILE, TOOL_FILE
from ..errors import ConfigError, InputError, ModelError, validation_message
from ..graph.sampling import MODE_WEIGHTS, SIZE_WEIGHTS
from ..llm.base import GenerationConfig
from ..records import ForwardDisplay, NullDisplay, RecordDisplay, run_records, run_sync, vet_records
from ..schema import SampledSubgraph, ToolGraph, ToolLibrary
from ..schema.generation import (
    AnswerUsage,
    CriticCall,
    FailedGenerationRecord,
    GenerationManifest,
    GenerationRecord,
    GoldExecution,
    StageAnswer,
)
from .dedup import DEFAULT_THRESHOLD
from .guided import guided_schema
from .output import DEDUP_MODES, KEEP_MODES, assess, check_generation_record, finalize_dataset
from .prompts import critic_messages, generation_messages
from .schemas import Limits, critic_schema, generation_schema, strict_backend

__all__ = [
    "GenerateOptions",
    "GenerateSummary",
    "MANIFEST_FILE",
    "METHODS",
    "agenerate",
    "entry_seed",
    "finish_output",
    "generate",
    "prepare_output",
    "sample_id",
]

METHODS = ("back-instruct", "two-stage", "no-edges", "self-instruct")
"""Generation methods: the released Back-Instruct, the paper's two-stage form and its two baselines."""

MANIFEST_FILE = HEADER_FILE
"""The run header holding the arguments a directory was generated with (checked on every rerun; directories
generated before headers have them in ``generation.json``, which is still read)."""

DEFAULT_MAX_TOKENS = 2048
"""Answer budget per call: above the longest answer the schema's bounds allow for a typical subgraph (the
string bounds make a 10-tool answer at most about 1,800 tokens); the reference engine sends 2,500."""

# arguments that must be the same on a rerun into the same directory (n may grow)
_FIXED = ("method", "seed", "mode_weights", "size_weights", "model", "critic_model", "check", "guided",
          "temperature", "top_p", "max_tokens", "limits", "graph_sha256", "env")
# what a manifest written before an argument existed meant by it
_MANIFEST_DEFAULTS: dict[str, Any] = {"guided": False, "env": None}

STATE_FILE = "env_state.txt"
"""The environment's state as the last run read it and showed it to the generator (``--env``)."""

GUIDED_METHODS = ("back-instruct", "two-stage")
"""The methods a guided schema applies to: those that show the model the sampled subgraph, edges included."""


class GenerateOptions(BaseModel):
    """What to generate and how."""

    model_config = ConfigDict(extra="forbid")

    n: int = Field(ge=0, description="Plan entries (samples attempted).")
    seed: int = Field(default=0, description="Plan seed: the same seed gives the same plan anywhere.")
    method: str = Field(default="back-instruct", description="back-instruct | two-stage | no-edges | self-instruct.")
    mode_weights: dict[str, float] | None = Field(default=None, description="single/chain/dag weights (3:7:8).")
    size_weights: dict[int, float] | None = Field(default=None, description="Tool-count weights for chain/dag.")
    check: bool = Field(default=True, description="Ask for the template's check_by_teacher (the LLM critic).")
    guided: bool | None = Field(
        default=None,
        description="The schema fixes the sampled nodes and links; the model writes only the text "
        "(engine/guided.py). None: on for back-instruct and two-stage, off for the baselines.",
    )
    keep: str = Field(default="both", description="Critics a sample must pass for data.json: both|rule|llm|none.")
    dedup: str = Field(default="flag", description="Near-duplicate requests: flag | drop | off.")
    dedup_threshold: float = Field(default=DEFAULT_THRESHOLD, gt=0, le=100, description="Similarity 0-100.")
    concurrency: int = Field(default=1, ge=1, description="Plan entries in flight at once.")
    temperature: float = Field(default=0.7, ge=0.0, description="Sampling temperature (the reference's 0.7).")
    top_p: float = Field(default=1.0, gt=0.0, le=1.0, description="Nucleus sampling mass.")
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=64, description="Most tokens per answer.")
    limits: Limits = Field(default_factory=Limits, description="Character bounds of the answer's strings.")

    def check_choices(self) -> None:
        """Raise ConfigError for unknown choices."""
        if self.method not in METHODS:
            raise ConfigError(f"unknown --method {self.method!r}; choose one of {', '.join(METHODS)}")
        if self.keep not in KEEP_MODES:
            raise ConfigError(f"--keep must be one of {', '.join(KEEP_MODES)}, not {self.keep!r}")
        if self.dedup not in DEDUP_MODES:
            raise ConfigError(f"--dedup must be one of {', '.join(DEDUP_MODES)}, not {self.dedup!r}")
        if self.guided and self.method not in GUIDED_METHODS:
            raise ConfigError(f"--guided needs the sampled edges in the prompt: use --method "
                              f"{' or '.join(GUIDED_METHODS)}, or --free with {self.method}")

    @property
    def use_guided(self) -> bool:
        """Whether this run's schema fixes the sampled subgraph (``guided`` resolved for the method)."""
        return self.method in GUIDED_METHODS if self.guided is None else self.guided


class GenerateSummary(BaseModel):
    """What one generation run did (facts about this run; the records hold the data)."""

    output: str = Field(description="The output directory.")
    model: str = Field(description="'provider/model' of the generator.")
    critic_model: str | None = Field(default=None, description="'provider/model' of a separate LLM critic.")
    method: str = Field(description="The generation method.")
    planned: int = Field(default=0, description="Plan entries (--n).")
    extended_from: int | None = Field(default=None, description="The earlier --n when this run extended the plan.")
    skipped: int = Field(default=0, description="Entries already done by an earlier run.")
    written: int = Field(default=0, description="Records written by this run.")
    failed_calls: int = Field(default=0, description="Entries whose model call failed for good (retried next run).")
    retried: int = Field(default=0, description="Entries whose earlier call had failed, tried again.")
    calls: int = Field(default=0, description="Model calls made by this run (generation and critic).")
    cache_hits: int = Field(default=0, description="Calls answered from the response cache.")
    prompt_tokens: int = Field(default=0, description="Prompt tokens of this run's calls.")
    completion_tokens: int = Field(default=0, description="Completion tokens of this run's calls.")
    seconds: float = Field(default=0.0, description="Wall seconds of this run.")
    errors: list[str] = Field(default_factory=list, description="First few failed calls, 'id: message'.")
    statistics: dict[str, Any] = Field(default_factory=dict, description="statistics.json as written.")

    @property
    def done(self) -> int:
        """Entries with an answer record (not a failed call)."""
        return self.skipped + self.written - self.failed_calls

    @property
    def complete(self) -> bool:
        """True when no model call of the plan failed for good."""
        return self.done == self.planned


def sample_id(index: int) -> str:
    """The id of plan entry ``index`` (``"00017"``)."""
    return f"{index:05d}"


def entry_seed(seed: int, index: int) -> int:
    """The generation seed of plan entry ``index`` (0..999999, like the reference's), from (seed, index) only."""
    return random.Random(f"taskbench-generate:{seed}:{index}").randrange(1_000_000)


def graph_digest(graph: ToolGraph) -> str:
    """SHA-256 of the graph's canonical JSON (what a directory was generated from)."""
    text = json.dumps(graph.to_taskbench(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _manifest(options: GenerateOptions, graph: ToolGraph, model: str, critic: str | None,
              env: str | None = None) -> GenerationManifest:
    # built from options already validated: not checked again here (a bad weight, say, is refused later, by the
    # plan, as before); the bounds are for what a rerun reads back
    return GenerationManifest.model_construct(
        env=env,
        method=options.method,
        seed=options.seed,
        n=options.n,
        mode_weights=dict(options.mode_weights or MODE_WEIGHTS),
        size_weights=dict(options.size_weights or SIZE_WEIGHTS),
        model=model,
        critic_model=critic,
        check=options.check,
        guided=options.use_guided,
        temperature=options.temperature,
        top_p=options.top_p,
        max_tokens=options.max_tokens,
        limits=options.limits.model_dump(),
        graph_sha256=graph_digest(graph),
        dependency=graph.dependency_kind,
        tools=len(graph.nodes),
        links=len(graph.links),
        taskbench=__version__,
    )


def read_manifest(out_dir: str | Path) -> GenerationManifest | None:
    """The arguments a directory was generated with (its run header's config; a ``generation.json`` of a
    directory generated before headers), or None. A recorded value of the wrong type or out of range raises
    :class:`InputError` naming the file."""
    header = read_header(out_dir, "generate")
    if header is None or header.kind != "generate":
        return None
    try:
        return GenerationManifest.model_validate(header.config)
    except ValidationError as exc:
        raise InputError(f"a recorded argument is wrong: {validation_message(exc)}",
                         path=Path(out_dir) / (header.legacy or HEADER_FILE),
                         hint="repair the file, or choose another --out") from None


def _check_n(old: Mapping[str, Any], new: Mapping[str, Any], path: Path) -> int | None:
    """Refuse a rerun that would drop plan entries; return the earlier n when the plan grows."""
    old_n = int(old.get("n") or 0)
    if new["n"] < old_n:
        raise ConfigError(
            f"{path}: holds a plan of {old_n} entries; --n {new['n']} would drop {old_n - new['n']} of them. "
            f"Rerun with --n {old_n} (or more, to extend it) or choose another --out"
        )
    return old_n if new["n"] > old_n else None


def _answer_view(out: Any) -> StageAnswer:
    """What a call produced, as recorded (no run-dependent facts: latency is replayed on a cache hit)."""
    return StageAnswer(raw=out.text, finish_reason=out.finish_reason,
                       usage=AnswerUsage(prompt_tokens=out.usage.prompt_tokens,
                                         completion_tokens=out.usage.completion_tokens, seconds=out.latency))


def _failure_of(out: Any, max_tokens: int) -> tuple[str, str] | None:
    """``(code, message)`` when an answer cannot be used: cut off at the token limit, or not JSON."""
    if out.truncated:
        return "truncated", f"the answer hit the token limit ({max_tokens} tokens) and was not used"
    if out.parse_error is not None or not isinstance(out.parsed, dict):
        return "unparseable", out.parse_error or "the answer is not a JSON object"
    return None


def _limits_for(model: Any, limits: Limits) -> Limits:
    """No ``maxLength`` for a backend that sends schemas in OpenAI's strict mode (it rejects the keyword)."""
    return limits.unbounded() if strict_backend(model) else limits


class _Engine:
    """One generation run's state: what every plan entry's work needs, and the run's counters."""

    def __init__(self, graph: ToolGraph, model: Any, options: GenerateOptions, critic: Any | None,
                 env: Any | None = None, state: str | None = None) -> None:
        import asyncio

        self.graph = graph
        self.env = env
        self.state = state
        self.env_lock = asyncio.Lock()
        self.library: ToolLibrary = graph.library
        self.model = model
        self.critic = critic
        self.options = options
        # OpenAI's strict schemas reject maxLength: there the arrays alone bound the answer
        self.limits = _limits_for(model, options.limits)
        self.critic_limits = _limits_for(critic, options.limits)
        self.calls = 0
        self.cache_hits = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def counters(self) -> dict[str, int]:
        """The run's calls, cache hits and tokens so far."""
        return {"calls": self.calls, "cache_hits": self.cache_hits, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens}

    def _count(self, out: Any) -> None:
        self.calls += 1
        self.cache_hits += int(out.usage.cached)
        self.prompt_tokens += out.usage.prompt_tokens
        self.completion_tokens += out.usage.completion_tokens

    def entry_fields(self, entry: SampledSubgraph) -> dict[str, Any]:
        """The fields every record of ``entry`` starts with (answered or failed): the plan entry, the run's
        method, model and schema choices, and the sampled subgraph as the prompt showed it."""
        from .parse import sampled_view

        fields: dict[str, Any] = {
            "id": sample_id(entry.index),
            "seed": entry_seed(self.options.seed, entry.index),
            "type": entry.mode,
            "n_tools": entry.size,
            "method": self.options.method,
            "model": self.model.name,
            "check": self.options.check,
            "guided": self.options.use_guided,
            "plan": entry,
        }
        if self.options.method != "self-instruct":
            fields["sampled_nodes"], fields["sampled_links"] = sampled_view(entry, self.library)
        return fields

    def _schema(self, entry: SampledSubgraph, parts: tuple[str, ...], title: str) -> dict[str, Any]:
        k = entry.size
        if self.options.use_guided:
            return guided_schema(entry, self.library, parts=parts, limits=self.limits, title=title)
        if self.options.method == "self-instruct":
            tools = list(self.library.tools)
        else:
            tools = [t for t in (self.library.get(n) for n in entry.nodes) if t is not None]
        if self.options.method in ("back-instruct", "two-stage"):
            max_links = max(len(entry.links), k - 1)
        else:  # the edges are the model's to choose: at most a DAG's worth
            max_links = k * (k - 1) // 2
        return generation_schema(tools, self.library.dependency, n_nodes=k, max_links=max_links, parts=parts,
                                 limits=self.limits, title=title)

    def _config(self, entry: SampledSubgraph) -> GenerationConfig:
        o = self.options
        return GenerationConfig(temperature=o.temperature, top_p=o.top_p, max_tokens=o.max_tokens,
                                seed=entry_seed(o.seed, entry.index))

    def _graph_parts(self) -> tuple[str, ...]:
        return ("task_steps", "invoking_graph") + (("check_by_teacher",) if self.options.check else ())

    async def work(self, entry: SampledSubgraph) -> dict[str, Any]:
        """Generate one plan entry: its line of data_raw.json (raises ModelError when a call fails for good)."""
        return (await self.generate(entry)).to_record()

    async def generate(self, entry: SampledSubgraph) -> GenerationRecord:
        """Generate one plan entry (raises ModelError when a call fails for good)."""
        o = self.options
        rec = GenerationRecord(**self.entry_fields(entry))
        seed = entry_seed(o.seed, entry.index)
        config = self._config(entry)
        if o.method == "two-stage":
            msgs = generation_messages(o.method, entry, self.library, seed=seed, check=o.check, stage=1,
                                       guided=o.use_guided, state=self.state)
            first = await self.model.generate(msgs, schema=self._schema(entry, ("user_request",), "UserRequest"),
                                              config=config)
            self._count(first)
            stages = rec.stages = [_answer_view(first)]
            failure = _failure_of(first, o.max_tokens)
            request = first.parsed.get("user_request") if failure is None else None
            if failure is None and not isinstance(request, str):
                failure = ("unparseable", "stage 1 gave no user_request")
            if failure is not None:
                rec.error_code, rec.error = failure[0], f"stage 1: {failure[1]}"
                rec.take(stages[0])
                return self._finish(rec)
            msgs = generation_messages(o.method, entry, self.library, seed=seed, check=o.check, stage=2, guided=o.use_guided,
                                       user_request=request, state=self.state)
            out = await self.model.generate(msgs, schema=self._schema(entry, self._graph_parts(), "InvocationGraph"),
                                            config=config)
            self._count(out)
            one, two = stages[0], _answer_view(out)
            stages.append(two)
            rec.take(two)
            rec.usage = AnswerUsage(prompt_tokens=one.usage.prompt_tokens + two.usage.prompt_tokens,
                                    completion_tokens=one.usage.completion_tokens + two.usage.completion_tokens,
                                    seconds=one.usage.seconds + two.usage.seconds)
            failure = _failure_of(out, o.max_tokens)
            if failure is None:
                rec.result = {"user_request": request, **out.parsed}
        else:
            parts = ("task_steps", "user_request", "invoking_graph") + (("check_by_teacher",) if o.check else ())
            msgs = generation_messages(o.method, entry, self.library, seed=seed, check=o.check, guided=o.use_guided,
                                       state=self.state)
            out = await self.model.generate(msgs, schema=self._schema(entry, parts, "BackInstruct"), config=config)
            self._count(out)
            rec.take(_answer_view(out))
            failure = _failure_of(out, o.max_tokens)
            if failure is None:
                rec.result = out.parsed
        if failure is not None:
            rec.error_code, rec.error = failure
            return self._finish(rec)
        if self.env is not None:
            rec.execution = await self._execute(rec)
        if self.critic is not None:
            rec.critic = await self._critic(rec, entry)
        return self._finish(rec)

    async def _execute(self, rec: GenerationRecord) -> GoldExecution:
        """The execution critic's record: the gold graph run in the environment (engine/execcheck.py)."""
        from .execcheck import execute_gold
        from .parse import build_sample

        async with self.env_lock:  # one gold graph at a time: their calls change the environment's state
            return await execute_gold(build_sample(rec, self.library), self.env)

    async def _critic(self, rec: GenerationRecord, entry: SampledSubgraph) -> CriticCall:
        from .parse import build_sample

        assert self.critic is not None  # only called when a critic model is set
        sample = build_sample(rec, self.library)
        shown = None if self.options.method == "self-instruct" else entry
        config = GenerationConfig(temperature=0.0, max_tokens=min(self.options.max_tokens, 1024),
                                  seed=rec.seed)
        out = await self.critic.generate(critic_messages(sample, self.library, shown, self.state),
                                         schema=critic_schema(self.critic_limits), config=config)
        self._count(out)
        answer = _answer_view(out)
        view = CriticCall(model=self.critic.name, raw=answer.raw, finish_reason=answer.finish_reason,
                          usage=answer.usage)
        failure = _failure_of(out, config.max_tokens)
        if failure is None:
            view.result = out.parsed
        else:
            view.error = f"{failure[0]}: {failure[1]}"
        return view

    def _finish(self, rec: GenerationRecord) -> GenerationRecord:
        """Attach the critics' verdicts in short (for the progress display; finalize recomputes them)."""
        _, verdicts = assess(rec, self.library, self.graph)
        rec.critics = {name: v.passed for name, v in verdicts.items()}
        return rec

    def failure(self, entry: SampledSubgraph, exc: BaseException) -> dict[str, Any]:
        """The line of a plan entry whose model call failed for good (the next run retries it)."""
        return FailedGenerationRecord(**self.entry_fields(entry), failed=True, error=str(exc)).to_record()


def _plan(graph: ToolGraph, options: GenerateOptions) -> list[SampledSubgraph]:
    from ..graph.sampling import sample_plan

    return sample_plan(graph, options.n, options.seed, mode_weights=options.mode_weights,
                       size_weights=options.size_weights)


def prepare_output(
    graph: ToolGraph, out_dir: str | Path, options: GenerateOptions, model_name: str, critic_name: str | None,
    env_name: str | None = None,
) -> tuple[Path, list[SampledSubgraph], GenerationManifest, int | None]:
    """Check the arguments against ``out_dir``'s manifest, write the graph files and the manifest, and return
    ``(out, plan, manifest, extended_from)``: what a generation run (local or sharded) does before any call."""
    options.check_choices()
    from ..graph.sampling import check_plan_size

    check_plan_size(options.n)  # before anything is written
    if options.keep in ("both", "llm") and not options.check and critic_name is None:
        raise ConfigError(f"--keep {options.keep} needs an LLM critic: drop --no-check or pass --critic-model")
    out = make_directory(out_dir, option="--out")
    manifest = _manifest(options, graph, model_name, critic_name, env_name)
    doc = manifest.model_dump(mode="json")
    header = new_header("generate", config=doc, identity={k: doc[k] for k in _FIXED},
                        seeds={"plan": options.seed})
    old = read_header(out, "generate")
    extended_from = None
    if old is not None:
        for key, default in _MANIFEST_DEFAULTS.items():  # a key added later: an earlier run had its default
            old.identity.setdefault(key, default)
        if old.identity == header.identity:
            old.fingerprint = header.fingerprint
        check_resume(old, header, out, option="--out", labels={"graph_sha256": "the tool graph"})
        extended_from = _check_n(old.config, doc, out)
        header.created = old.created or header.created
    elif (out / RAW_FILE).is_file():
        raise ConfigError(f"{out}: holds a {RAW_FILE} but no {HEADER_FILE}: not a directory taskbench generated; "
                          "choose another --out")
    if (out / RAW_FILE).is_file():
        vet_records(out / RAW_FILE)  # a broken records file is refused before anything here is rewritten
    plan = _plan(graph, options)
    write_json(out / TOOL_FILE, graph.library.to_taskbench())
    write_json(out / GRAPH_FILE, graph.to_taskbench())
    write_header(out, header)
    return out, plan, manifest, extended_from


def finish_output(
    out: Path, graph: ToolGraph, options: GenerateOptions, plan: list[SampledSubgraph],
    manifest: GenerationManifest, extended_from: int | None, ran: Any, counters: Mapping[str, int],
) -> GenerateSummary:
    """Critics and near-duplicate detection over the whole ``data_raw.json`` (after a sharded run: after the
    merge), the output files, and the run's summary. ``ran`` is the records pass (a runner or sharded summary:
    ``skipped``, ``written``, ``failed``, ``retried``, ``seconds``, ``errors``); ``counters`` the calls,
    cache hits and tokens."""
    model = manifest.model or ""
    info = {"method": options.method, "model": model, "critic_model": manifest.critic_model,
            "seed": options.seed, "n": options.n, "dependency": manifest.dependency}
    stats = finalize_dataset(out, graph.library, graph, ids=[sample_id(e.index) for e in plan], keep=options.keep,
                             dedup=options.dedup, dedup_threshold=options.dedup_threshold, info=info)
    return GenerateSummary(
        output=str(out), model=model, critic_model=manifest.critic_model, method=options.method,
        planned=len(plan), extended_from=extended_from, skipped=ran.skipped, written=ran.written,
        failed_calls=ran.failed, retried=ran.retried, calls=counters.get("calls", 0),
        cache_hits=counters.get("cache_hits", 0), prompt_tokens=counters.get("prompt_tokens", 0),
        completion_tokens=counters.get("completion_tokens", 0), seconds=ran.seconds, errors=ran.errors,
        statistics=stats,
    )


def _check_env_tools(graph: ToolGraph, env: Any) -> None:
    """Refuse an environment that has none of the graph's tools (another server than the graph was built from)."""
    names = [t.id for t in graph.library.tools]
    if names and all(env.tool(name) is None for name in names):
        offered = ", ".join(t.name for t in env.tools()[:8]) or "none"
        raise ConfigError(f"--env {env.name}: has none of the tool graph's tools ({', '.join(names[:5])}, ...); "
                          f"it offers: {offered}. Build the graph from the same server: taskbench graph build "
                          f"\"{env.name}\" -o graph.json")


async def agenerate(
    graph: ToolGraph,
    model: Any,
    out_dir: str | Path,
    options: GenerateOptions,
    *,
    critic_model: Any | None = None,
    display: RecordDisplay | None = None,
    clock: Any = time.perf_counter,
    env: Any | None = None,
) -> GenerateSummary:
    """Generate ``options.n`` plan entries of ``graph`` with ``model`` into ``out_dir`` (resuming what is
    there), then write the reference layout (see the module docstring). ``model`` / ``critic_model`` are
    :class:`taskbench.llm.Model` objects (anything with ``name`` and ``async generate(messages, schema=,
    config=)``). ``env``: an executable :class:`~taskbench.envs.Environment` of these tools: its state
    (:meth:`~taskbench.envs.Environment.read_state`, saved in ``env_state.txt``) goes into every prompt, and
    each answered sample's gold graph is run in it (the ``exec`` critic, :mod:`taskbench.engine.execcheck`).
    Sharded over workers: :func:`taskbench.executors.generate.agenerate_sharded`."""
    if env is not None:
        _check_env_tools(graph, env)
    out, plan, manifest, extended_from = prepare_output(graph, out_dir, options, model.name,
                                                        getattr(critic_model, "name", None),
                                                        None if env is None else str(env.name))
    state = None
    if env is not None:
        state = await env.read_state()
        (out / STATE_FILE).write_text((state or "(the environment shows no state)") + "\n", encoding="utf-8")
    engine = _Engine(graph, model, options, critic_model, env, state)
    label = f"{options.method} · {model.name}"
    shown = display or NullDisplay()
    ran = await run_records(plan, engine.work, out / RAW_FILE, key=lambda e: sample_id(e.index),
                            concurrency=options.concurrency, label=label, display=ForwardDisplay(shown),
                            failure=engine.failure, catch=(ModelError,), check=check_generation_record,
                            clock=clock)
    summary = finish_output(out, graph, options, plan, manifest, extended_from, ran, engine.counters())
    shown.finish(summary)
    return summary


def generate(
    graph: ToolGraph,
    model: Any,
    out_dir: str | Path,
    options: GenerateOptions,
    *,
    critic_model: Any | None = None,
    display: RecordDisplay | None = None,
    close_model: bool = False,
    env: Any | None = None,
) -> GenerateSummary:
    """:func:`agenerate` for plain code (blocks; safe inside a running event loop too). ``close_model`` closes
    the model(s) at the end, inside the event loop where their HTTP clients were made."""

    async def go() -> GenerateSummary:
        try:
            return await agenerate(graph, model, out_dir, options, critic_model=critic_model, display=display,
                                   env=env)
        finally:
            if close_model:
                await model.aclose()
                if critic_model is not None:
                    await critic_model.aclose()

    return run_sync(go())


def resume_arguments(out_dir: str | Path) -> GenerationManifest:
    """The arguments a directory was generated with (for a rerun that names only ``--out``)."""
    doc = read_manifest(out_dir)
    if doc is None:
        raise InputError(f"no {MANIFEST_FILE} here: pass --tools or --graph to start a new directory", path=out_dir)
    return doc


def weights_from_manifest(doc: GenerationManifest) -> tuple[dict[str, float] | None, dict[int, float] | None]:
    """The mode and size weights recorded in a manifest."""
    modes = None if doc.mode_weights is None else dict(doc.mode_weights)
    return modes, (dict(doc.size_weights) if doc.size_weights else None)
