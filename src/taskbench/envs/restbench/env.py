"""``restbench-tmdb`` and ``restbench-spotify``: the RestBench environments.

Data flow::

    spec (RestBench's OpenAPI file, or ours) --load_tools(openapi_ids="path")--> ToolSpecs "GET /search/person"
    fixtures (data/<api>/*.json) --> Backend --> Service on 127.0.0.1 (shared by every env of that API and spec)
    ToolCall --_execute: path/query/header/body from ToolSpec.http--> HTTP --> ToolResult (status + JSON; a 4xx
        is an error the agent reads)
    tasks: RestBench queries (gold path normalised) + our checker and solution script, or our own task set
    check(task, answer): the checker over the answer, the episode's end state and its successful responses
        (provenance, in the default check mode) -> CheckResult

One environment instance is one episode at a time; its session id isolates its state in the shared service.
"""

from __future__ import annotations

import copy
import hashlib
import json
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ...errors import ConfigError, MissingDependencyError
from ...graph.loaders import load_tools
from ...schema import AgentTask, CheckResult, ToolCall, ToolResult, ToolSpec
from ..base import CHECK_MODES, Environment, parse_check_mode
from . import service as svc
from .answers import Lexicon
from .checking import Traces, evaluate, path_scores, resolve_checker, run_script
from .dataset import (
    RestBenchQueries,
    check_api,
    find_restbench_dir,
    load_queries,
    load_task_file,
    normalize_path,
    spec_path,
)
from .spotify import Spotify
from .tmdb import TMDB

TASK_SETS = ("auto", "restbench", "own", "all")


def _backend(api: str) -> svc.Backend:
    return TMDB() if api == "tmdb" else Spotify()


class RestBenchEnv(Environment):
    """An offline RestBench API (TMDB or Spotify) with its tasks and checkers.

    Options: ``restbench_dir`` (RestBench's data directory; default ``$TASKBENCH_RESTBENCH_DIR``, else
    ``shared/reference/restbench`` beside the checkout when present), ``spec`` (an OpenAPI file to serve
    instead), ``task_set``: ``restbench`` (the dataset's queries), ``own`` (our bundled tasks), ``all``, or
    ``auto`` (RestBench's when its files are found, else ours). ``check``: ``solved`` (default: the answer
    passes the checker and what it is credited for appeared in a successful response of the episode) or
    ``answer-only`` (RestBench-compatible: the answer alone; see :data:`CHECK_MODES`).
    """

    def __init__(self, api: str, *, restbench_dir: str | Path | None = None, spec: str | Path | None = None,
                 task_set: str = "auto", timeout: float = 30.0, check: str = "solved") -> None:
        super().__init__()
        self.api = check_api(api)
        self.name = f"restbench-{api}"  # type: ignore[misc]
        if task_set not in TASK_SETS:
            raise ConfigError(f"unknown task_set {task_set!r} (known: {', '.join(TASK_SETS)})")
        self.check_mode = parse_check_mode(check)
        self._candidates: list[str] | None = None
        self.restbench_dir = find_restbench_dir(restbench_dir)
        has_queries = self.restbench_dir is not None and (self.restbench_dir / f"{api}.json").is_file()
        if task_set == "auto":
            task_set = "restbench" if has_queries else "own"
        if task_set in ("restbench", "all") and not has_queries:
            where = f"no {api}.json in {self.restbench_dir}" if self.restbench_dir is not None else "none found"
            raise ConfigError(
                f"task_set={task_set!r} needs RestBench's files ({where}): run `taskbench data fetch "
                "restbench`, or pass restbench_dir= or set $TASKBENCH_RESTBENCH_DIR",
            )
        self.task_set = task_set
        self.spec_file = Path(spec) if spec is not None else spec_path(api, self.restbench_dir)
        self._tools = load_tools(self.spec_file, format="openapi", openapi_ids="path").specs()
        self._by_name = {t.name: t for t in self._tools}
        self.timeout = timeout
        self.session = f"{api}-{uuid.uuid4().hex[:12]}"
        self._key = (api, hashlib.sha256(self.spec_file.read_bytes()).hexdigest()[:16])
        self._service: svc.Service | None = None
        self._client: Any = None
        self._tasks: list[AgentTask] | None = None
        self.problems: list[str] = []
        self._initial: Any = None
        self._resolved_cache: dict[tuple[str, str, str], tuple[list[dict[str, Any]], Traces]] = {}

    # ------------------------------------------------------------------------------------------ tools

    def tools(self) -> list[ToolSpec]:
        return list(self._tools)

    def tool(self, name: str) -> ToolSpec | None:
        return self._by_name.get(name)

    # ------------------------------------------------------------------------------------------ service

    @property
    def service(self) -> svc.Service:
        """The shared loopback service (started on first use)."""
        if self._service is None:
            self._service = svc.acquire(self._key, lambda: svc.Service(_backend(self.api), self._tools))
        return self._service

    @property
    def backend(self) -> svc.Backend:
        return self.service.backend

    @property
    def base_url(self) -> str:
        return self.service.base_url

    def _http(self) -> Any:
        if self._client is None:
            try:
                import httpx
            except ImportError as exc:  # pragma: no cover
                raise MissingDependencyError("httpx", "restbench", "calling the RestBench services") from exc
            self._client = httpx.AsyncClient(timeout=self.timeout, trust_env=False)
        return self._client

    async def _reset(self, seed: int, task: AgentTask | None) -> None:
        backend = self.backend
        setup = task.meta.get("setup") if task is not None else None
        backend.reset_session(self.session, setup if isinstance(setup, dict) else None)
        self._initial = copy.deepcopy(backend.state(self.session))

    def snapshot(self) -> Any:
        """A copy of this episode's state in the service (the Spotify user's library, playlists and player;
        TMDB has none)."""
        return copy.deepcopy(self.backend.state(self.session))

    def request_for(self, spec: ToolSpec, arguments: dict[str, Any]) -> tuple[str, str, dict[str, Any], dict[str, str],
                                                                                 dict[str, Any] | None]:
        """(method, url, query, headers, JSON body) for a call to ``spec`` with ``arguments``."""
        http = spec.http
        assert http is not None
        path = http.path
        query: dict[str, Any] = {}
        headers: dict[str, str] = {svc.SESSION_HEADER: self.session}
        body: dict[str, Any] = {}
        placed: set[str] = set()
        for p in http.parameters:
            if p.name not in arguments or p.name in placed:
                continue
            value = arguments[p.name]
            placed.add(p.name)
            if p.location == "path":
                path = path.replace("{" + p.name + "}", quote(_text(value), safe=""))
            elif p.location == "query":
                query[p.name] = _text(value)
            elif p.location == "header":
                headers[p.name] = _text(value)
            elif p.location == "body":
                body[p.name] = value
        for name, value in arguments.items():  # undeclared arguments go in the query, as a client would send them
            if name not in placed:
                query[name] = _text(value)
        send_body = body if (body or (http.request_body is not None and http.method != "GET")) else None
        return http.method, self.base_url + path, query, headers, send_body

    async def _execute(self, call: ToolCall) -> ToolResult:
        spec = self._by_name[call.name]
        if spec.http is None:
            return ToolResult(call_id=call.id, name=call.name, error="this tool has no HTTP binding")
        missing = [p.name for p in spec.http.parameters if p.location == "path" and p.name not in call.arguments]
        if missing:
            return ToolResult(call_id=call.id, name=call.name, status=None,
                              error=f"missing path parameter(s) {', '.join(missing)} for {spec.http.path}")
        method, url, query, headers, body = self.request_for(spec, dict(call.arguments))
        response = await self._http().request(method, url, params=query, headers=headers, json=body)
        content: Any = None
        if response.content:
            try:
                content = response.json()
            except ValueError:
                content = response.text
        if response.status_code >= 400:
            return ToolResult(call_id=call.id, name=call.name, status=response.status_code, content=content,
                              error=f"HTTP {response.status_code}: {json.dumps(content, ensure_ascii=False)}")
        return ToolResult(call_id=call.id, name=call.name, status=response.status_code, content=content)

    # ------------------------------------------------------------------------------------------ tasks

    def api_call(self, op: str, args: dict[str, Any], session: str | None = None) -> Any:
        """What the service answers for ``op`` with (already typed) ``args``, in-process, without HTTP."""
        status, body = self.backend.handle(op, dict(args), session or f"{self.session}-check")
        if status >= 400:
            raise ConfigError(f"checker request {op} {args} failed: {body}")
        return body

    def tasks(self) -> list[AgentTask]:
        if self._tasks is None:
            self._tasks = self._load_tasks()
        return list(self._tasks)

    def _load_tasks(self) -> list[AgentTask]:
        operations = [t.name for t in self._tools]
        out: list[AgentTask] = []
        if self.task_set in ("restbench", "all"):
            assert self.restbench_dir is not None
            queries = load_queries(self.api, self.restbench_dir, operations)
            out += self._restbench_tasks(queries)
        if self.task_set in ("own", "all"):
            for item in load_task_file(f"{self.api}_own").get("tasks", []):
                gold, fixes = normalize_path(item.get("gold_path", []), operations)
                meta: dict[str, Any] = {"source": "taskbench", "fixes": fixes, "checker": item["checker"],
                                        "solution": item.get("solution")}
                if item.get("setup"):
                    meta["setup"] = item["setup"]
                out.append(AgentTask(id=item["id"], query=item["query"], gold_path=gold, env=self.name, meta=meta))
        for task in out:
            task.answer = self._expected(task)
        return out

    def _restbench_tasks(self, queries: RestBenchQueries) -> list[AgentTask]:
        self.problems.extend(queries.problems)
        ours = {int(t["index"]): t for t in load_task_file(f"{self.api}_restbench").get("tasks", [])}
        out = []
        for q in queries.queries:
            entry = ours.get(q.index)
            meta: dict[str, Any] = {"source": "restbench", "index": q.index, "query_sha": q.sha,
                                    "solution_raw": q.solution, "fixes": q.fixes}
            if entry is None:
                self.problems.append(f"{self.api} query {q.index}: we have no checker for it")
            elif entry.get("sha") != q.sha:
                self.problems.append(f"{self.api} query {q.index}: its text changed since our checker was written "
                                     f"(hash {q.sha}, ours {entry.get('sha')}); loaded without a checker")
            else:
                meta["checker"] = entry["checker"]
                meta["solution"] = entry.get("solution")
                if entry.get("setup"):
                    meta["setup"] = entry["setup"]
                if entry.get("note"):
                    meta["note"] = entry["note"]
            out.append(AgentTask(id=f"{self.api}-{q.index:03d}", query=q.query, gold_path=q.gold_path, env=self.name,
                                 meta=meta))
        return out

    def _resolved(self, task: AgentTask) -> tuple[list[dict[str, Any]], Traces]:
        """The task's checker resolved against its initial state, with where each value was read (cached)."""
        checker: Any = task.meta.get("checker")
        cache_key = (task.id, json.dumps(checker, sort_keys=True, default=str), json.dumps(task.meta.get("setup"),
                                                                                         sort_keys=True, default=str))
        if cache_key not in self._resolved_cache:
            backend = self.backend
            session = f"{self.session}-expected"
            setup = task.meta.get("setup")
            backend.reset_session(session, setup if isinstance(setup, dict) else None)
            traces: Traces = []
            try:
                resolved = resolve_checker(checker, api=lambda op, args: self.api_call(op, args, session),
                                           initial=backend.state(session), traces=traces)
            finally:
                backend.drop_session(session)
            self._resolved_cache[cache_key] = (resolved, traces)
        return self._resolved_cache[cache_key]

    def _expected(self, task: AgentTask) -> Any:
        if not isinstance(task.meta.get("checker"), list):
            return None
        return self._resolved(task)[0]

    async def check(self, task: AgentTask, answer: str | None) -> CheckResult:
        calls = [c.name for c in self._calls]
        succeeded = [c.name for c, r in zip(self._calls, self._results, strict=False) if r.error is None]
        checker: Any = task.meta.get("checker")
        if not isinstance(checker, list):
            return CheckResult(success=False, reason="no checker for this task", calls=calls,
                               gold_path=list(task.gold_path))
        expected, traces = self._resolved(task)
        state = self.backend.state(self.session)
        observed = self.observed() if self.check_mode == "solved" else None
        ok, failures = evaluate(expected, answer, state, succeeded, candidates=self.lexicon(), query=task.query,
                                observed=observed, traces=traces, initial=self._initial)
        return CheckResult(success=ok, reason="solved" if ok else "; ".join(failures), calls=calls,
                           gold_path=list(task.gold_path),
                           details={"failures": list(failures), "check": self.check_mode,
                                    "calls_ok": len(succeeded),
                                    "gold_calls_ok": sum(1 for name in succeeded if name in set(task.gold_path)),
                                    "path": path_scores(calls, task.gold_path)})

    def candidates(self) -> list[str]:
        """Every name and title in this API's fixture files (see :meth:`lexicon` for what the checker reads)."""
        if self._candidates is None:
            self._candidates = fixture_names(self.api)
        return list(self._candidates)

    def lexicon(self) -> Lexicon:
        """Every name the API's data holds, by kind (``tmdb:person[].name`` ...): what an answer is read with
        (shared by every environment of this API and spec)."""
        return _lexicon(self._key, self.backend)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self._service is not None:
            self._service.backend.drop_session(self.session)
            self._service = None
            svc.release(self._key)


_LEXICONS: dict[tuple[str, str], Lexicon] = {}


def _lexicon(key: tuple[str, str], backend: svc.Backend) -> Lexicon:
    if key not in _LEXICONS:
        _LEXICONS[key] = Lexicon.from_data(backend.records(), f"{backend.api}:")
    return _LEXICONS[key]


def fixture_names(api: str) -> list[str]:
    """The ``name`` and ``title`` strings of the fixture files of ``api`` (data/<api>/*.json), in order."""
    from importlib import resources

    folder = resources.files("taskbench.envs.restbench").joinpath("data").joinpath(api)
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k in ("name", "title") and isinstance(v, str):
                    out.append(v)
                else:
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for item in sorted(folder.iterdir(), key=lambda i: i.name):
        if item.name.endswith(".json"):
            walk(json.loads(item.read_text(encoding="utf-8")))
    return list(dict.fromkeys(out))


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_text(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


def open_tmdb(**options: Any) -> RestBenchEnv:
    """The ``restbench-tmdb`` environment."""
    return RestBenchEnv("tmdb", **options)


def open_spotify(**options: Any) -> RestBenchEnv:
    """The ``restbench-spotify`` environment."""
    return RestBenchEnv("spotify", **options)




async def solve(env: RestBenchEnv, task: AgentTask) -> str:
    """Run ``task``'s solution script through ``env`` (calls recorded like an agent's) and return its answer."""
    script = task.meta.get("solution")
    if not isinstance(script, dict):
        raise ConfigError(f"task {task.id} has no solution script")
    counter = iter(range(1_000_000))

    async def call(op: str, args: dict[str, Any]) -> tuple[int | None, Any, str | None]:
        result = await env.call(ToolCall(id=f"call_{next(counter)}", name=op, arguments=args))
        return result.status, result.content, result.error

    answer, _ = await run_script(script, call)
    return answer


__all__ = ["CHECK_MODES", "TASK_SETS", "RestBenchEnv", "fixture_names", "open_spotify", "open_tmdb", "path_scores", "solve"]
