"""Benchmark: adversarial answers against the RestBench checker, in both check modes.

For every task of RestBench-TMDB and -Spotify (``--restbench-dir``, default ../shared/reference/restbench) and of
our own task sets, each *strategy* writes answers meant to pass without solving the task: a list of every value
of one kind of the data, every year, the dates around the right one, the gold hedged with others ("G, O1 or
O2"), the gold negated in ways a clause splitter misses, the query copied back, a bare "Yes.", the gold buried
in other values, the answer of another task, hedged numbers ... A task counts as passed by a strategy when
any of the strategy's answers for it passes. Each answer is checked twice:

- ``answer-only``: no call made (RestBench's own evaluation: the answer alone decides);
- ``solved``: after the calls of the task's solution script (the episode observed everything the right answer
  needs), so only the answer rules stand between the strategy and a pass.

Then the provenance strategies (``solved`` mode): the right answer written from memory after no call, after one
junk call, after calls that echo the answer back (a search for it), after the gold path called with wrong ids.
The ``oracle`` rows are the right answer after the solution's calls: they should pass every task.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_checker.py
    PYTHONPATH=src .venv/bin/python benchmarks/bench_checker.py --api tmdb --task-set own -o results.json
    PYTHONPATH=src .venv/bin/python benchmarks/bench_checker.py --dump answers.json   # every answer tried
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from taskbench.envs.restbench import RestBenchEnv, solve  # noqa: E402
from taskbench.envs.restbench.answers import Lexicon, iso_date, key  # noqa: E402
from taskbench.schema import ToolCall  # noqa: E402

Task = dict[str, Any]  # what a strategy sees of a task


def as_list(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [x for v in value for x in as_list(v)]
    return [] if value is None else [value]


def text_of(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def gold_parts(resolved: list[dict[str, Any]]) -> list[str]:
    """The least an answer must state to pass the checker's mention conditions."""
    out: list[str] = []
    for cond in resolved:
        if "all" in cond:
            out += [text_of(v) for v in as_list(cond["all"])]
        if "any" in cond and as_list(cond["any"]):
            out.append(text_of(as_list(cond["any"])[0]))
        if "at_least" in cond:
            out += [text_of(v) for v in as_list(cond.get("of"))[: int(cond["at_least"])]]
        if "picks" in cond:
            out.append(text_of(cond["picks"]))
    return list(dict.fromkeys(out))


def join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def kind_pools(lexicon: Lexicon) -> dict[str, list[str]]:
    pools: dict[str, list[str]] = {}
    for entry in lexicon.entries.values():
        for kind in entry.kinds:
            pools.setdefault(kind, []).append(entry.text)
    return pools


def same_kind(lexicon: Lexicon, pools: dict[str, list[str]], value: str, avoid: set[str], n: int) -> list[str]:
    """``n`` other values of ``value``'s kind (dates: nearby dates; numbers: nearby numbers)."""
    day = iso_date(value)
    if day:
        d = date.fromisoformat(day)
        return [(d + timedelta(days=s)).isoformat() for s in (1, -1, 2, -2, 3)[:n]]
    if re.fullmatch(r"-?\d+(\.\d+)?", value):
        number = float(value)
        step = 1 if number.is_integer() else 0.1
        return [text_of(round(number + s * step, 1)) for s in (1, -1, 2)[:n]]
    kinds = lexicon.kinds(key(value)) - {"expected", "part"} or lexicon.kinds(key(value))
    out: list[str] = []
    for kind in sorted(kinds):
        for other in pools.get(kind, []):
            if key(other) not in avoid and other not in out:
                out.append(other)
            if len(out) >= n:
                return out
    return out


# ------------------------------------------------------------------------------------------------ strategies

def strategies() -> dict[str, Callable[[Task], Iterator[str]]]:
    def gold_and(fn: Callable[[str, list[str], Task], str], n: int = 2) -> Callable[[Task], Iterator[str]]:
        def make(t: Task) -> Iterator[str]:
            parts = t["gold"]
            if not parts or t["yes_no"]:  # a yes/no question has its own strategies (negating it says "no")
                return
            others = same_kind(t["lexicon"], t["pools"], parts[0], t["avoid"], n)
            if len(others) >= n:
                yield fn(join(parts), others, t)
        return make

    def every_of_kind(t: Task) -> Iterator[str]:
        kinds: set[str] = set()
        for part in t["gold"]:
            kinds |= t["lexicon"].kinds(key(part)) - {"expected"}
        for kind in sorted(kinds) or []:
            values = t["pools"].get(kind, [])
            if len(values) >= 2:
                yield ", ".join(values)
                yield ", ".join(values[:40])  # as much as fits in an answer's length

    def every_kind(t: Task) -> Iterator[str]:
        for _kind, values in sorted(t["pools"].items()):
            if 2 <= len(values) <= 400:
                chunks = [values] + ([values[i:i + 30] for i in range(0, len(values), 30)] if len(values) > 30 else [])
                for chunk in chunks:
                    if any(key(v) not in t["avoid"] for v in chunk):  # (a chunk of right values only is an answer)
                        yield ", ".join(chunk)

    def years(t: Task) -> Iterator[str]:
        yield ", ".join(str(y) for y in range(1905, 2026))
        yield "It was in one of these years: " + ", ".join(str(y) for y in range(1960, 2026)) + "."

    def dates_around(t: Task) -> Iterator[str]:
        for part in t["gold"]:
            day = iso_date(part)
            if day:
                d = date.fromisoformat(day)
                around = [(d + timedelta(days=s)).isoformat() for s in range(-20, 21)]
                yield ", ".join(around)
                yield "; ".join((d + timedelta(days=s)).strftime("%B %-d, %Y") for s in range(-20, 21))
                yield f"{(d - timedelta(days=1)).isoformat()}, {day} or {(d + timedelta(days=1)).isoformat()}"

    def numbers_around(t: Task) -> Iterator[str]:
        for part in t["gold"]:
            if re.fullmatch(r"\d+", part):
                n = int(part)
                yield f"about {n}"
                yield f"{n} or {n + 1}"
                yield f"{max(n - 1, 0)} to {n + 1}"
                yield f"between {max(n - 3, 0)} and {n + 3}: " + ", ".join(str(i) for i in range(max(n - 3, 0), n + 4))
                yield ", ".join(str(i) for i in range(0, 201))
                yield f"at least {n}"

    def query_copy(t: Task) -> Iterator[str]:
        yield t["query"]
        yield f"{t['query']} {t['query']}"

    def bare(t: Task) -> Iterator[str]:
        yield from ("Yes.", "No.", "Yes", "No")

    def yes_and_no(t: Task) -> Iterator[str]:
        yield from ("Yes and no.", "Yes. No.", "Maybe.", "Yes or no.")

    def buried(t: Task) -> Iterator[str]:
        if not t["gold"]:
            return
        others = same_kind(t["lexicon"], t["pools"], t["gold"][0], t["avoid"], 60)
        limit = t["limit"]
        filler = []
        for other in others:
            if len(", ".join(filler + [other])) + len(join(t["gold"])) + 4 > limit:
                break
            filler.append(other)
        half = len(filler) // 2
        if filler:
            yield ", ".join(filler[:half] + [join(t["gold"])] + filler[half:])
        words = "the result of the search was listed among several records in the database today".split()
        noise = " ".join(words * 40)[: max(0, limit - len(join(t["gold"])) - 10)]
        yield noise[: len(noise) // 2] + " " + join(t["gold"]) + " " + noise[len(noise) // 2:]

    def sibling(t: Task) -> Iterator[str]:
        """Other tasks' right answers, unless they state one of this task's acceptable values (then they
        answer this task too: the top rated movie named in "who directed the top rated movie")."""
        mine = [k for k in t["avoid"] if k]
        for other in t["siblings"]:
            said = " " + key(other["answer"]) + " "
            if other["answer"] and not any(f" {k} " in said for k in mine):
                yield other["answer"]

    def picks_both(t: Task) -> Iterator[str]:
        for cond in t["resolved"]:
            if "picks" in cond:
                options = [text_of(o) for o in as_list(cond.get("over"))]
                if len(options) >= 2:
                    a, b = options[0], options[1]
                    yield f"{a} or {b}"
                    yield f"Both {a} and {b}."
                    yield f"{a} and {b}"
                    yield f"{b}. {a}."
                    yield f"{a}/{b}"

    def picks_wrong(t: Task) -> Iterator[str]:
        for cond in t["resolved"]:
            if "picks" in cond:
                loser = next((text_of(o) for o in as_list(cond.get("over")) if o != cond["picks"]), None)
                if loser:
                    yield f"{loser}."
                    yield f"{text_of(cond['picks'])}? No, {loser}."
                    yield f"{loser} is the one, not {text_of(cond['picks'])}."

    def nothing(t: Task) -> Iterator[str]:
        yield from ("", "I don't know.", "I could not find it.")

    def lowercase_list(t: Task) -> Iterator[str]:
        for answer in every_of_kind(t):
            yield answer.lower()

    def bullets(t: Task) -> Iterator[str]:
        if not t["gold"]:
            return
        others = same_kind(t["lexicon"], t["pools"], t["gold"][0], t["avoid"], 3)
        if others:
            yield "\n".join(f"- {x}" for x in [others[0], join(t["gold"]), *others[1:]])
            yield ". ".join([join(t["gold"]), *others]) + "."

    neg = {
        "negation: Was it G? No, it was O.": lambda g, o, t: f"Was it {g}? No, it was {o[0]}.",
        "negation: G is wrong; it is O.": lambda g, o, t: f"{g} is wrong; it is {o[0]}.",
        "negation: G is incorrect, O is.": lambda g, o, t: f"{g} is incorrect, {o[0]} is.",
        "negation: more forms (8)": None,
    }
    more_forms = [
        lambda g, o: f"Not {g} but {o[0]}.", lambda g, o: f"It isn't {g}. It's {o[0]}.",
        lambda g, o: f"{g}? No. {o[0]}.", lambda g, o: f"Some say {g}, but it is {o[0]}.",
        lambda g, o: f"It is {g}. Scratch that: {o[0]}.", lambda g, o: f"Rather than {g}, it is {o[0]}.",
        lambda g, o: f"If it were {g}, I would say so; it is {o[0]}.", lambda g, o: f"{g} (wrong). {o[0]} (right).",
    ]

    def more_negations(t: Task) -> Iterator[str]:
        if not t["gold"] or t["yes_no"]:
            return
        others = same_kind(t["lexicon"], t["pools"], t["gold"][0], t["avoid"], 1)
        if others:
            for form in more_forms:
                yield form(join(t["gold"]), others)

    out: dict[str, Callable[[Task], Iterator[str]]] = {
        "every value of the gold's kind": every_of_kind,
        "every value of one kind (each kind)": every_kind,
        "every year 1905-2025": years,
        "every date around the right one": dates_around,
        "numbers around the right one": numbers_around,
        "hedge: G, O1 or O2": gold_and(lambda g, o, t: f"{g}, {o[0]} or {o[1]}"),
        "hedge: G or O": gold_and(lambda g, o, t: f"{g} or {o[0]}", 1),
        "hedge: G and O": gold_and(lambda g, o, t: f"It is {g} and {o[0]}.", 1),
        "hedge: maybe G, maybe O": gold_and(lambda g, o, t: f"Maybe {g}, maybe {o[0]}.", 1),
    }
    for name, fn in neg.items():
        out[name] = more_negations if fn is None else gold_and(fn, 1)
    out.update({
        "the query copied back": query_copy,
        "a bare yes / no": bare,
        "yes and no, maybe": yes_and_no,
        "the gold buried in noise": buried,
        "a sibling task's answer": sibling,
        "which-one: both options": picks_both,
        "which-one: the wrong option": picks_wrong,
        "every value of the gold's kind, lower case": lowercase_list,
        "bullets / sentences of candidates": bullets,
        "empty / I don't know": nothing,
    })
    return out


# ------------------------------------------------------------------------------------------------ running


async def run_set(api: str, task_set: str, restbench_dir: Path | None, only: set[str],
                  cases: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The battery over one task set; ``cases`` (a list) also receives every answer tried, with the task, the
    strategy and the solution's calls, so another checker can be run on the same answers (``--dump``)."""
    where = restbench_dir if task_set == "restbench" else Path(tempfile.mkdtemp())
    solved = RestBenchEnv(api, restbench_dir=where, task_set=task_set)
    loose = RestBenchEnv(api, restbench_dir=where, task_set=task_set, check="answer-only")
    tasks = [t for t in solved.tasks() if isinstance(t.meta.get("checker"), list)]
    lexicon = solved.lexicon()
    pools = kind_pools(lexicon)
    infos: list[Task] = []
    for task in tasks:
        await solved.reset(0, task)
        answer = await solve(solved, task)
        calls = [(c, r) for c, r in zip(solved.calls, solved.results, strict=True)]
        resolved = task.answer if isinstance(task.answer, list) else []
        gold = gold_parts(resolved)
        from taskbench.envs.restbench.checking import expected_values
        from taskbench.envs.restbench.judge import answer_limit

        infos.append({"task": task, "query": task.query, "resolved": resolved, "gold": gold, "answer": answer,
                      "yes_no": any("yes" in c for c in resolved),
                      "asks": any(k in c for c in resolved for k in ("all", "any", "at_least", "picks", "yes")),
                      "calls": calls, "lexicon": lexicon, "pools": pools, "limit": answer_limit(expected_values(resolved)),
                      "avoid": {key(text_of(v)) for v in expected_values(resolved)} | {key(g) for g in gold}})
    for info in infos:
        info["siblings"] = [o for o in infos if o is not info]

    async def replay(env: RestBenchEnv, info: Task) -> None:
        await env.reset(0, info["task"])
        for call, _result in info["calls"]:
            await env.call(call)

    async def passes(env: RestBenchEnv, info: Task, answers: list[str], calls: bool) -> str | None:
        """The first answer that passes, or None."""
        if calls:
            await replay(env, info)
        else:
            await env.reset(0, info["task"])
        for answer in answers:
            if (await env.check(info["task"], answer)).success:
                return answer
        return None

    rows: dict[str, dict[str, Any]] = {}
    for name, make in strategies().items():
        if only and name not in only:
            continue
        applicable = loose_pass = solved_pass = 0
        examples: list[str] = []
        for info in infos:
            answers = list(dict.fromkeys(make(info))) if info["asks"] else []  # (an action task's answer is free)
            if not answers:
                continue
            applicable += 1
            if cases is not None:
                cases.append({"api": api, "task_set": task_set, "task": info["task"].id, "strategy": name,
                              "answers": answers, "calls": [[c.name, c.arguments] for c, _r in info["calls"]]})
            passed = await passes(loose, info, answers, calls=False)
            if passed is not None:
                loose_pass += 1
                examples.append(f"{info['task'].id}: {passed[:160]}")
            passed = await passes(solved, info, answers, calls=True)
            if passed is not None:
                solved_pass += 1
                examples.append(f"{info['task'].id} (solved): {passed[:160]}")
        rows[name] = {"tasks": applicable, "answer-only": loose_pass, "solved": solved_pass, "examples": examples[:60]}

    # provenance strategies: the right answer without having found it
    async def memory(label: str, prepare: Callable[[RestBenchEnv, Task], Any]) -> None:
        """The solution's answer after ``prepare``'s calls (``prepare`` returns False where it does not apply)."""
        passed, applied, examples = 0, 0, []
        for info in infos:
            await solved.reset(0, info["task"])
            if await prepare(solved, info) is False:
                continue
            applied += 1
            if (await solved.check(info["task"], info["answer"])).success:
                passed += 1
                examples.append(f"{info['task'].id}: {[c.name for c in solved.calls][:12]}")
        rows[label] = {"tasks": applied, "answer-only": None, "solved": passed, "examples": examples[:60]}

    async def no_call(env: RestBenchEnv, info: Task) -> None:
        return None

    async def junk(env: RestBenchEnv, info: Task) -> None:
        for name in info["task"].gold_path:  # the first operation of the gold path that takes an id or a query
            spec = env.tool(name)
            params = [p for p in (spec.http.parameters if spec and spec.http else []) if p.location == "path" or p.required]
            if params:
                args = {p.name: (1 if "id" in p.name else "zzzz") for p in params}
                await env.call(ToolCall(id="junk", name=name, arguments=args))
                break
        search = "GET /search/movie" if api == "tmdb" else "GET /search"
        await env.call(ToolCall(id="junk2", name=search, arguments={"query": "zzzz", "q": "zzzz", "type": "track"}
                                if api == "spotify" else {"query": "zzzz"}))

    async def echo(env: RestBenchEnv, info: Task) -> None:
        """Searches for the answer's values (every value the checker accepts, not only the ones stated), so
        that their responses show them, or each other."""
        from taskbench.envs.restbench.checking import expected_values

        values = [v for v in expected_values(info["resolved"]) if isinstance(v, str) and not v.startswith("/")]
        asked = f" {key(info['query'])} "
        for part in [p for p in dict.fromkeys([*info["gold"], *values]) if f" {key(p)} " not in asked][:20]:
            # (searching what the user named is the honest first step, not an echo)
            if api == "tmdb":
                for op in ("GET /search/person", "GET /search/movie", "GET /search/tv", "GET /search/company",
                           "GET /search/collection", "GET /search/keyword"):
                    if env.tool(op):
                        await env.call(ToolCall(id="echo", name=op, arguments={"query": part}))
            else:
                await env.call(ToolCall(id="echo", name="GET /search",
                                        arguments={"q": part, "type": "track,artist,album,playlist"}))

    async def wrong_ids(env: RestBenchEnv, info: Task) -> bool | None:
        if not any(isinstance(v, int) and not isinstance(v, bool) for c, _r in info["calls"] for v in c.arguments.values()):
            return False
        for call, _r in info["calls"]:
            args = {k: (v + 1 if isinstance(v, int) and not isinstance(v, bool) else v) for k, v in call.arguments.items()}
            await env.call(call.model_copy(update={"arguments": args}))

    async def oracle(env: RestBenchEnv, info: Task) -> None:
        await replay(env, info)

    async def flood(env: RestBenchEnv, info: Task) -> bool | None:
        """The solution's calls, then each state-changing call again on every other item of the same kind
        (follow every artist, save every track, queue every song); not for tasks that ask to empty a list."""
        if any(c.get("equals") == [] for c in info["resolved"]):
            return False
        await replay(env, info)
        tables = {k: list(getattr(env.backend, k, {})) for k in ("artists", "tracks", "albums")}
        made = 0
        for call, _r in info["calls"]:
            if call.name.startswith("GET"):
                continue
            for name, value in call.arguments.items():
                text = json.dumps(value)
                for ids in tables.values():
                    found = [i for i in ids if i in text]
                    for other in ids if found and made < 300 else []:
                        args = dict(call.arguments)
                        args[name] = json.loads(text.replace(found[0], other))
                        await env.call(call.model_copy(update={"arguments": args}))
                        made += 1
        return None if made else False

    await memory("memory: no call", no_call)
    await memory("memory: one junk call on the gold path", junk)
    await memory("memory: a search that echoes the answer", echo)
    await memory("memory: the gold path with ids + 1 (*)", wrong_ids)
    await memory("oracle: the solution's calls and answer", oracle)
    if api == "spotify":
        await memory("state: the action done to every item (flood)", flood)
    loose_oracle = 0
    for info in infos:
        await loose.reset(0, info["task"])
        answer = await solve(loose, info["task"])  # (ids a call creates differ between environments)
        loose_oracle += (await loose.check(info["task"], answer)).success
    rows["oracle: the solution's calls and answer"]["answer-only"] = loose_oracle
    await solved.aclose()
    await loose.aclose()
    return {"api": api, "task_set": task_set, "tasks": len(infos), "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--restbench-dir", type=Path, default=None,
                    help="RestBench's data directory (tmdb.json, spotify.json); default: $TASKBENCH_RESTBENCH_DIR or "
                         "shared/reference/restbench beside the checkout; none found: own tasks only")
    ap.add_argument("--api", default="tmdb,spotify", help="tmdb, spotify or both (default)")
    ap.add_argument("--task-set", default="all", choices=("restbench", "own", "all"))
    ap.add_argument("--strategy", action="append", default=[], help="run only this strategy (repeatable)")
    ap.add_argument("-o", "--output", type=Path, help="write the results as JSON")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the answers that passed")
    ap.add_argument("--dump", type=Path, help="write every answer tried (task, strategy, the solution's calls) as "
                                              "JSON, to run another checker on them")
    args = ap.parse_args()
    from taskbench.envs.restbench.dataset import find_restbench_dir

    args.restbench_dir = find_restbench_dir(args.restbench_dir)
    have = args.restbench_dir is not None and (args.restbench_dir / "tmdb.json").is_file()
    sets = [s for s in (("restbench", "own") if args.task_set == "all" else (args.task_set,)) if s == "own" or have]
    if not sets:
        sys.exit(f"no RestBench files in {args.restbench_dir} (pass --restbench-dir, or --task-set own)")
    results = []
    cases: list[dict[str, Any]] | None = [] if args.dump else None
    start = time.perf_counter()
    for api in [a.strip() for a in args.api.split(",") if a.strip()]:
        for task_set in sets:
            results.append(asyncio.run(run_set(api, task_set, args.restbench_dir, set(args.strategy), cases)))
    names = list(dict.fromkeys(n for r in results for n in r["rows"]))
    header = "| strategy | " + " | ".join(f"{r['api']} {r['task_set']} ({r['tasks']})" for r in results) + " |"
    print("passes per strategy: answer-only / solved (tasks the strategy applies to)\n")
    print(header)
    print("|" + "---|" * (len(results) + 1))
    for name in names:
        cells = []
        for r in results:
            row = r["rows"].get(name)
            if row is None:
                cells.append("-")
                continue
            loose = "-" if row["answer-only"] is None else str(row["answer-only"])
            cells.append(f"{loose} / {row['solved']} (of {row['tasks']})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\n{time.perf_counter() - start:.0f} s")
    if args.verbose:
        for r in results:
            for name, row in r["rows"].items():
                for example in row["examples"] if not name.startswith("oracle") else []:
                    print(f"{r['api']} {r['task_set']} | {name} | {example}")
    if args.output:
        args.output.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    if args.dump and cases is not None:
        args.dump.write_text(json.dumps(cases, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
