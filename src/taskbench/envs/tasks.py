"""Tasks from a file, for any environment: ``agents eval --tasks FILE``.

A task file is JSON Lines, one task a line::

    {"id": "tokyo", "query": "It is 09:00 in London. What time is it in Tokyo?",
     "gold_path": ["convert_time"],
     "setup": [{"call": "write_query", "args": {"query": "DELETE FROM orders"}}],
     "checker": [{"any": ["17:00", "18:00"]}]}

- ``query`` (required): what the user asks. ``id``: unique (default ``line-N``). ``gold_path``: the tool names
  of a solution, in call order (for the path metrics). ``answer``: any JSON, kept with the task.
- ``setup``: tool calls made before the episode, not recorded and not shown to the agent (``{"call": TOOL,
  "args": {...}}``), so an episode starts from a known state (a table filled, a file written). A setup call that
  fails stops the episode with an error naming the task.
- ``checker``: the conditions of RestBench's checkers (:mod:`taskbench.envs.restbench.checking`): ``all``,
  ``any``, ``at_least``/``of``, ``none``, ``yes``, ``picks``/``over`` on the final answer, ``observed`` on the
  responses seen, ``called`` on the calls that succeeded, and a VALUE may be ``{"api": TOOL, "args": {...}, "expr": JMESPATH}``: what that tool answers
  *at check time* (after the episode). An end-state condition reads the environment by calling a tool:
  ``{"call": TOOL, "args": {...}, "expr": JMESPATH, "equals" | "same_items" | "includes" | "excludes" |
  "one_of" | "below": VALUE}``. A tool result that is JSON text is read as JSON; ``expr`` is applied to it.

Success (:func:`check_task`, in the environment's check mode): in ``solved`` (the default) every value the
answer is credited for must have appeared in a successful tool response of the episode, not echoed from the
call's own arguments (:mod:`taskbench.envs.restbench.provenance`): a VALUE read at check time counts when the
episode saw the response it was read from (the same call, or a response holding its values), a literal when
a response shows it; ``{"observed": VALUE}`` names values the episode must have seen without asking the
answer to say them (what a yes/no answer rests on: a checker that asks only ``{"yes": true}`` has nothing to
prove and fails in this mode). ``called`` counts calls that succeeded. ``answer-only`` (``check=`` option of
the environment) reads the answer alone. The answer is read as RestBench's is (:mod:`.restbench.answers`),
with the query, so numbers the query states are no "other numbers", and with the names the responses hold
as the candidates a list of names is checked against.

An environment's own checker (RestBench's) reads the same ``checker`` and ``setup`` keys, so a task file for
``restbench-tmdb`` uses its fixture-backed VALUEs. Every problem in the file is one ``file:line`` error: what
the file alone shows when it is read (:func:`load_tasks`: keys, types, a JMESPath ``expr`` that does not parse
or calls an unknown function), and what needs the environment once it is open (:func:`check_tasks`: a tool in
``gold_path``, ``setup``, ``called``, ``call`` or ``api`` that the environment lacks, a task the ``--tools``
setting would leave without tools, set-ups that would change data taskbench cannot give each episode a copy
of). A set-up call that fails during a run fails the episode with :data:`SETUP_FAILED` and the task's line.

**A generated benchmark is a task file too**: ``--tasks DIR`` with a dataset directory (what ``taskbench
generate --env`` wrote, or its ``review --export``) makes one task per sample (:func:`tasks_from_dataset`):
the query is the user request, the gold path the gold graph's tools in the order they ran, and the checker
asks for those calls in that order plus, when the gold graph's last call returned a few plain values (at most
:data:`MAX_ANSWER_VALUES` numbers or short texts, as recorded by the ``exec`` critic when it ran), an answer
that mentions them all.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError
from ..schema import AgentTask, CheckResult, ToolCall, ToolResult
from ..schema.chat import nesting_depth
from .state import result_error

TASK_KEYS = frozenset({"id", "query", "gold_path", "checker", "setup", "answer", "meta"})
STATE_TESTS = ("equals", "same_items", "includes", "excludes", "one_of", "below")
ANSWER_TESTS = ("all", "any", "at_least", "none", "yes", "picks", "called", "observed")
MAX_TASK_DEPTH = 64
"""The deepest a task line's objects and arrays may nest (checker conditions inside ``any``/``all`` included)."""
MAX_CHECK_CALLS = 64
"""Tool calls one check may make (VALUEs and end-state conditions together)."""
SETUP_FAILED = "set-up failed"
"""How the error of an episode whose task set-up failed starts (the CLI tells it from a model failure)."""

Executor = Callable[[ToolCall], Awaitable[ToolResult]]


BUNDLED = ("mcp-time", "mcp-sqlite", "mcp-filesystem")
"""Example task files shipped with taskbench (``--tasks mcp-sqlite``): for mcp-server-time, mcp-server-sqlite
and @modelcontextprotocol/server-filesystem, offline (docs/mcp.md gives the commands)."""


def task_file(spec: str | Path) -> Path:
    """A task file as given, else the bundled example of that name."""
    path = Path(spec)
    if not path.exists() and str(spec) in BUNDLED:
        from importlib import resources

        return Path(str(resources.files("taskbench.bundled") / "tasks" / f"{spec}.jsonl"))
    return path


MAX_ANSWER_VALUES = 5
"""Most values of a gold graph's final result an answer must mention (more: the check asks only for the calls)."""


def gold_order(nodes: list[str], links: list[tuple[str, str]]) -> list[int] | None:
    """Node indices in a topological order of ``links`` between the ``nodes`` (tool names; ties in node
    order), or None when the links have a cycle."""
    index = {name: i for i, name in enumerate(nodes)}
    after: dict[int, set[int]] = {i: set() for i in range(len(nodes))}
    for source, target in links:
        s, t = index.get(source), index.get(target)
        if s is not None and t is not None and s != t:
            after[t].add(s)
    order: list[int] = []
    done: set[int] = set()
    while len(order) < len(nodes):
        ready = [i for i in range(len(nodes)) if i not in done and after[i] <= done]
        if not ready:
            return None
        order.append(ready[0])
        done.add(ready[0])
    return order


def _plain_values(value: Any, out: list[Any]) -> None:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (int, float)) or (isinstance(value, str) and 0 < len(value.strip()) <= 40):
        if value not in out:
            out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _plain_values(v, out)
    elif isinstance(value, list):
        for v in value:
            _plain_values(v, out)


def tasks_from_dataset(root: str | Path, *, env: str | None = None) -> list[AgentTask]:
    """One task per sample of a dataset directory (see the module docstring)."""
    from ..dataset.layout import load_dataset
    from .state import result_value

    ds = load_dataset(root)
    tasks: list[AgentTask] = []
    for sample in ds.samples:
        names = [n.task for n in sample.task_nodes]
        order = gold_order(names, [(lk.source, lk.target) for lk in [*sample.task_links, *sample.reference_links()]])
        gold = [names[i] for i in (order or range(len(names)))]
        checker: list[dict[str, Any]] = [{"called": gold, "why": "the gold graph's calls"}] if gold else []
        verdict = sample.critics.get("exec")
        raw = verdict.raw if verdict is not None and verdict.passed and isinstance(verdict.raw, list) else []
        calls = [c for c in raw if isinstance(c, dict)]
        if calls and [c.get("tool") for c in calls] == gold:  # the gold graph has not changed since it ran
            values: list[Any] = []
            _plain_values(result_value(calls[-1].get("result")), values)
            if 0 < len(values) <= MAX_ANSWER_VALUES:
                checker.append({"all": values, "why": f"what {gold[-1]} returned when the gold graph ran"})
        meta: dict[str, Any] = {"dataset": str(root), "sample": sample.id}
        if checker:
            meta["checker"] = checker
        tasks.append(AgentTask(id=sample.id, query=sample.user_request, gold_path=gold, env=env, meta=meta))
    if not tasks:
        raise InputError("the dataset has no samples to turn into tasks", path=root,
                         hint="generate some first (taskbench generate), or pass a JSON Lines task file")
    return tasks


def load_tasks(path: str | Path, *, env: str | None = None) -> list[AgentTask]:
    """Read a task file (see the module docstring), a bundled one by name (:data:`BUNDLED`), or a dataset
    directory (:func:`tasks_from_dataset`); every problem is an :class:`InputError` with its line."""
    path = task_file(path)
    if path.is_dir():
        return tasks_from_dataset(path, env=env)
    from ..dataset.jsonio import check_input_file

    check_input_file(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("file not found", path=path, hint="pass a JSON Lines file of tasks, or one of the "
                         f"bundled examples: {', '.join(BUNDLED)}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the task file ({exc})", path=path) from None
    tasks: list[AgentTask] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except (json.JSONDecodeError, RecursionError, ValueError) as exc:
            raise InputError(f"invalid JSON ({exc})", path=path, line=number,
                             hint="one JSON object a line") from None
        tasks.append(_task(item, path, number, env))
        if tasks[-1].id in seen:
            raise InputError(f"duplicate task id {tasks[-1].id!r} (also on line {seen[tasks[-1].id]})", path=path,
                             line=number, hint="give every task its own id")
        seen[tasks[-1].id] = number
    if not tasks:
        raise InputError("the task file has no tasks", path=path, hint='one {"query": ...} a line')
    return tasks


def _task(item: Any, path: Path, line: int, env: str | None) -> AgentTask:
    def bad(message: str, hint: str | None = None) -> InputError:
        return InputError(message, path=path, line=line, hint=hint)

    if not isinstance(item, dict):
        raise bad("a task is a JSON object", 'e.g. {"query": "...", "checker": [{"all": ["..."]}]}')
    if nesting_depth(item, MAX_TASK_DEPTH) > MAX_TASK_DEPTH:  # checked before anything recurses into it
        raise bad(f"the task nests deeper than {MAX_TASK_DEPTH} levels", "flatten its checker, setup or answer")
    unknown = sorted(set(item) - TASK_KEYS)
    if unknown:
        raise bad(f"unknown key {unknown[0]!r}", f"keys: {', '.join(sorted(TASK_KEYS))}")
    query = item.get("query")
    if not isinstance(query, str) or not query.strip():
        raise bad("'query' must be a non-empty string")
    task_id = item.get("id", f"line-{line}")
    if not isinstance(task_id, str) or not task_id.strip() or "/" in task_id:
        raise bad("'id' must be a non-empty string without '/'")
    gold = item.get("gold_path", [])
    if not isinstance(gold, list) or not all(isinstance(g, str) for g in gold):
        raise bad("'gold_path' must be a list of tool names")
    meta = dict(item.get("meta") or {}) if isinstance(item.get("meta", {}), dict) else None
    if meta is None:
        raise bad("'meta' must be an object")
    checker = item.get("checker")
    if checker is not None:
        if not isinstance(checker, list) or not all(isinstance(c, dict) and c for c in checker):
            raise bad("'checker' must be a list of conditions", 'e.g. [{"all": ["17:00"]}]')
        for cond in checker:
            if not any(k in cond for k in (*ANSWER_TESTS, "state", "call")):
                raise bad(f"a checker condition tests nothing: {json.dumps(cond)[:80]}",
                          f"use one of: {', '.join(ANSWER_TESTS)}, or call/state with {', '.join(STATE_TESTS)}")
            if "call" in cond and (not isinstance(cond["call"], str) or not any(k in cond for k in STATE_TESTS)):
                raise bad("an end-state condition is {\"call\": TOOL, \"args\": {...}, \"expr\": ..., "
                          f"<test>: VALUE}} with a test among {', '.join(STATE_TESTS)}")
        for expr in _expressions(checker):
            problem = expression_problem(expr)
            if problem is not None:
                raise bad(f"checker expression {expr!r}: {problem}", "JMESPath, e.g. \"[0].n\" or \"cast[0].name\"")
        meta["checker"] = checker
    setup = item.get("setup")
    if setup is not None:
        calls = setup if isinstance(setup, list) else None
        if calls is not None:
            for step in calls:
                if not (isinstance(step, dict) and isinstance(step.get("call"), str)
                        and isinstance(step.get("args", {}), dict)):
                    raise bad("each setup step is {\"call\": TOOL, \"args\": {...}}")
        elif not isinstance(setup, dict):  # RestBench's own setup is an object (its fixture changes)
            raise bad("'setup' must be a list of tool calls")
        meta["setup"] = setup
    meta["line"] = line
    return AgentTask(id=task_id, query=query, gold_path=gold, answer=item.get("answer"), env=env, meta=meta)


def _expressions(value: Any) -> list[str]:
    """Every JMESPath string in a checker (``expr`` of conditions and VALUEs, ``initial``; nested)."""
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("expr", "initial") and isinstance(v, str):
                out.append(v)
            else:
                out += _expressions(v)
    elif isinstance(value, list):
        for v in value:
            out += _expressions(v)
    return out


def expression_problem(expr: str) -> str | None:
    """Why the JMESPath ``expr`` cannot run (a syntax error, an unknown function), or None."""
    from .restbench.checking import _jmespath, search

    jmespath = _jmespath()
    try:
        parsed = jmespath.compile(expr)
    except jmespath.exceptions.JMESPathError as exc:
        return " ".join(str(exc).split())
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "function_expression":
                names.add(str(node.get("value")))
            for child in node.get("children") or []:
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(parsed.parsed)
    for name in sorted(names):
        try:
            search(f"{name}()", None)  # a known function complains about its arguments; an unknown one, its name
        except jmespath.exceptions.UnknownFunctionError:
            return f"unknown function {name}()"
        except Exception:  # noqa: BLE001,S110 - the arity or types of a known function
            pass
    return None


def _tool_names(task: AgentTask) -> list[tuple[str, str]]:
    """(where, tool name) of every tool a task names: its gold path, set-up calls, and checker."""
    out = [("gold_path", g) for g in task.gold_path]
    setup = task.meta.get("setup")
    if isinstance(setup, list):
        out += [("setup", str(step["call"])) for step in setup if isinstance(step, dict) and "call" in step]

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key in ("api", "call"):
                if isinstance(value.get(key), str):
                    out.append((f"checker {key!r}", value[key]))
            called = value.get("called")
            if isinstance(called, list):
                out.extend(("checker 'called'", str(c)) for c in called if isinstance(c, str))
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(task.meta.get("checker"))
    return out


def check_tasks(tasks: list[AgentTask], env: Any, *, path: str | Path | None, tools: str = "all",
                concurrency: int = 1) -> None:
    """Refuse, with the task's ``file:line``, what the open environment ``env`` shows a task file gets wrong
    (see the module docstring): a tool name it lacks (with the closest name), a task ``--tools gold`` would
    leave without tools, and, on a server whose data taskbench cannot copy per episode (``env.shared_state``),
    set-ups on one reached by URL (they would change the data it serves) and, with ``concurrency`` above 1,
    set-ups and end-state checks on any (episodes in flight would see each other's changes)."""
    from ..errors import suggest

    known = [t.name for t in env.tools()]
    names = set(known)
    shared = getattr(env, "shared_state", None)
    for task in tasks:
        line = task.meta.get("line")
        at = line if isinstance(line, int) else None
        label = f"task {task.id!r}"
        for part, name in _tool_names(task):
            if name not in names:
                close = suggest(name, known)
                hint = f"did you mean {close[0]!r}?" if close else f"tools: {', '.join(known[:12])}"
                raise InputError(f"{label}: {part} names the tool {name!r}, which {env.name} does not have",
                                 hint=hint, path=path, line=at)
        if tools == "gold" and not task.gold_path:
            raise InputError(f"{label} has no gold_path, and --tools gold offers only the gold path's tools",
                             hint="give it a gold_path, or run with --tools gold+10 or all", path=path, line=at)
        if shared is None:
            continue
        checker = task.meta.get("checker")
        setup = bool(task.meta.get("setup"))
        stateful = setup or (isinstance(checker, list) and any(isinstance(c, dict) and "call" in c for c in checker))
        remote = getattr(getattr(env, "server", None), "transport", "stdio") != "stdio"
        if remote and setup:
            raise InputError(f"{label} has a set-up, and {env.name}: {shared}; the set-up would change the data "
                             "it serves", hint="start the server as a command "
                             "(mcp:<command> naming its data, which each episode then gets a copy of)", path=path,
                             line=at)
        if stateful and concurrency > 1:
            raise InputError(f"{label} has a set-up or an end-state check, and with --concurrency {concurrency} "
                             f"the episodes in flight on {env.name} would share state ({shared})",
                             hint="run with --concurrency 1, or name the server's data file or directory on its "
                             "command line so that each episode gets a copy", path=path, line=at)


# --------------------------------------------------------------------------------------------- episodes


def _value(result: ToolResult) -> Any:
    """What a tool result says, for expressions: JSON text read as JSON (a Python literal too)."""
    from .restbench.provenance import parse_content

    if result.error is not None:
        raise ConfigError(f"tool {result.name!r} failed: {result.error}")
    return parse_content(result.content)


async def run_setup(task: AgentTask, execute: Executor) -> None:
    """Make the task's setup calls (a list of ``{"call", "args"}``), unrecorded; a failure is a ConfigError
    that starts with :data:`SETUP_FAILED` and names the task (and its line in the task file)."""
    setup = task.meta.get("setup")
    if not isinstance(setup, list):
        return
    line = task.meta.get("line")
    where = f" (line {line} of the task file)" if isinstance(line, int) else ""
    for i, step in enumerate(setup):
        if not isinstance(step, dict):
            continue
        name, args = str(step.get("call")), step.get("args") or {}
        result = await execute(ToolCall(id=f"setup-{i}", name=name, arguments=dict(args) if isinstance(args, dict) else {}))
        error = result_error(result)  # an error result, or a text answer that is an error message
        if error is not None:
            raise ConfigError(f"{SETUP_FAILED}: task {task.id!r}{where}: call {i + 1} ({name}) failed: "
                              f"{' '.join(error.split())[:300]}")


async def check_task(task: AgentTask, answer: str | None, calls: list[ToolCall], results: list[ToolResult],
                     execute: Executor, known: Callable[[str], bool], *, mode: str = "solved",
                     observed: Any = None) -> CheckResult:
    """The verdict of a task's ``checker`` (see the module docstring), calling tools through ``execute``
    (unrecorded) for VALUEs and end-state conditions. ``calls`` and ``results``: the episode's; ``called``
    counts the calls that succeeded, and in ``mode="solved"`` every value the answer is credited for must have
    appeared in a successful response (:mod:`taskbench.envs.restbench.provenance`; ``answer-only``: the
    answer alone); ``observed``: those responses already indexed. No checker: not solved, and the reason says
    so."""
    from .restbench.answers import Lexicon
    from .restbench.checking import Traces, evaluate, path_scores, resolve_checker, search
    from .restbench.provenance import Observed

    names = [c.name for c in calls]
    succeeded = [(c, r) for c, r in zip(calls, results, strict=False) if r.error is None]
    checker: Any = task.meta.get("checker")
    gold = list(task.gold_path)
    if not isinstance(checker, list):
        return CheckResult(success=False, reason="this task has no checker (add one in the task file: "
                           "--tasks FILE, key 'checker')", calls=names, gold_path=gold)
    answers: dict[str, Any] = {}
    used = 0

    class _Need(Exception):
        def __init__(self, key: str, name: str, args: dict[str, Any]) -> None:
            self.key, self.name, self.arguments = key, name, args

    def api(name: str, args: dict[str, Any]) -> Any:
        key = json.dumps([name, args], sort_keys=True, default=str)
        if key not in answers:
            raise _Need(key, name, args)
        return answers[key]

    async def ask(key: str, name: str, args: dict[str, Any]) -> None:
        nonlocal used
        used += 1
        if used > MAX_CHECK_CALLS:
            raise ConfigError(f"task {task.id!r}: the checker needs more than {MAX_CHECK_CALLS} tool calls")
        if not known(name):
            raise ConfigError(f"task {task.id!r}: the checker calls {name!r}, which this environment lacks")
        answers[key] = _value(await execute(ToolCall(id=f"check-{used}", name=name, arguments=args)))

    # answer conditions (VALUEs resolved by calling tools until every call they need is answered)
    plain = [c for c in checker if "call" not in c]
    traces: Traces = []
    try:
        while True:
            try:
                traces = []
                resolved = resolve_checker(plain, api=api, initial=None, traces=traces)
                break
            except _Need as need:
                await ask(need.key, need.name, need.arguments)
        # end-state conditions: read the state by calling the tool, then test it as RestBench's "state"
        state: dict[str, Any] = {}
        for i, cond in enumerate(c for c in checker if "call" in c):
            args = dict(cond.get("args") or {})
            key = json.dumps([cond["call"], args], sort_keys=True, default=str)
            await ask(key, str(cond["call"]), args)  # at check time, after any earlier reads
            got = answers[key]
            try:
                state[f"s{i}"] = search(str(cond["expr"]), got) if cond.get("expr") else got
            except Exception as exc:  # noqa: BLE001 - a bad expression, or a result of another shape
                raise ConfigError(f"expression {cond['expr']!r} over {cond['call']}: {type(exc).__name__}: {exc}") from None
            test = {k: v for k, v in cond.items() if k not in ("call", "args", "expr")}
            while True:
                try:
                    test = resolve_checker([test], api=api, initial=None)[0]
                    break
                except _Need as need:
                    await ask(need.key, need.name, need.arguments)
            label = f"{cond['call']}({json.dumps(args, ensure_ascii=False)})" + (f".{cond['expr']}" if cond.get("expr") else "")
            resolved.append({**test, "state": f"s{i}", "why": test.get("why") or label})
            traces.append({})
    except Exception as exc:  # noqa: BLE001 - a broken checker fails the check, it does not end the run
        why = str(exc) if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}"
        return CheckResult(success=False, reason=f"the checker could not run: {why}", calls=names,
                           gold_path=gold)
    if observed is None:  # (the environment's own index, when it keeps one)
        observed = Observed((c.name, dict(c.arguments), r.content) for c, r in succeeded)
    lexicon = Lexicon()  # the names the responses hold, by tool and key path: what a list of candidates draws on
    for call in observed.calls:
        Lexicon.from_data(call.content, f"{call.name}:", into=lexicon)
    for found in traces:
        for sources in found.values():
            for source in sources:
                Lexicon.from_data(source.body, f"{source.op}:", into=lexicon)
    ok, failures = evaluate(resolved, answer, state, [c.name for c, _r in succeeded], candidates=lexicon,
                            query=task.query, observed=observed if mode == "solved" else None, traces=traces)
    return CheckResult(success=ok, reason="solved" if ok else "; ".join(failures), calls=names, gold_path=gold,
                       details={"failures": list(failures), "check": mode, "path": path_scores(names, gold)})


__all__ = ["SETUP_FAILED", "check_task", "check_tasks", "expression_problem", "gold_order", "load_tasks",
           "run_setup", "tasks_from_dataset"]
