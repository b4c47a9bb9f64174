"""Agent metrics: pure functions over trajectories and episode rows (no model, no files).

Per episode (:func:`episode_row`, from a :class:`~taskbench.schema.Trajectory`):

- **success**: the environment's checker (``trajectory.outcome.success``);
- **correct path rate, LCS** (ConAgents' evaluation code): the longest common subsequence of the called
  tools and the gold path over the gold length, both lower-cased and, as that code does, each ending in a
  ``finish`` token (the calls get it when the episode gave an answer); :func:`correct_path_lcs`;
- **correct path rate, F1** (the paper's definition, section 5.1): F1 of the called tools against the gold
  path as multisets; :func:`correct_path_f1`;
- **correct path, contains** (RestBench/RestGPT): 1 when the gold path is a subsequence of the calls;
- **mechanism** (:func:`mechanism`): what review did: verdicts that asked for a change, plans revised (and
  changed), reroutes to grounding, code rewrites (and those that fixed a failed run);
- **extra calls** (RestGPT's delta solution length): calls beyond the gold length, counted on successes;
- **attempts**: trials used by the agents that retry until solved (``react@N``, ``toolllm@N``, ``reflexion``;
  1 for the others); their path rates and extra calls are the last trial's (the one the checker judged), their
  tokens, turns and tool calls every trial's; per agent also the success rate within k trials
  (:func:`success_by_attempt`);
- **answer in view** (:func:`view_flag`): whether the values the checker expects in the answer were in what the
  agent saw of the tool results (``answer_in_view``) and in the results at all (``answer_in_results``), from
  the outcome's ``view`` details (:mod:`taskbench.agents.observe`); per agent :func:`view_summary`;
- turns (model calls of a planning or acting role), model calls, reviews, code runs, tool calls, tokens, the
  seconds the model calls took (replayed from the cache on a rerun) and wall seconds (this run's clock).

Over episodes of one agent (:func:`agent_summary`): means, ratios over successes (extra calls, tokens per
solved task), pass^k over K seeds as tau-bench defines it (per task with n trials of which c succeeded,
C(c, k) / C(n, k), averaged over tasks; :func:`pass_hat_k`), and seeded bootstrap 95% CIs with tasks as the
resampled unit (seeds of a task stay together). :func:`paired` compares two agents on the tasks both
finished: difference, paired bootstrap CI and a paired randomization p-value (``taskbench.eval.stats``).

**Crashes** (an episode whose record is a failure: a model call failed for good, the agent or the checker
broke) are failures in every rate: :func:`crash_row` makes each one a row that did not succeed, gave no
answer and called nothing, so it stays in the denominator of the success rate, pass^k, the path rates and the
paired comparisons. Means of what an episode cost (tokens, turns, calls, seconds, trials) are over the
episodes that finished, since a crash's cost is unknown. ``crashed`` counts them per agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import comb
from typing import Any

import numpy as np

from ..schema import CodeRunEvent, ModelCallEvent, ReviewEvent, ToolCallEvent, Trajectory
from ..schema.episode import EpisodeRow

FINISH_TOKEN = "finish"

CRASHED = "crashed"
"""The ``stop`` of a crash row (:func:`crash_row`): the episode's record is a failure record."""


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two sequences."""
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, 1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def correct_path_lcs(calls: Sequence[str], gold: Sequence[str], *, answered: bool) -> float | None:
    """ConAgents' correct path rate: LCS(calls + [finish if answered], gold + [finish]) / (len(gold) + 1),
    lower-cased; None without a gold path."""
    if not gold:
        return None
    pred = [c.lower() for c in calls] + ([FINISH_TOKEN] if answered else [])
    want = [g.lower() for g in gold] + [FINISH_TOKEN]
    return lcs_length(pred, want) / len(want)


def contains_path(calls: Sequence[str], gold: Sequence[str]) -> bool | None:
    """RestGPT's correct path: the gold path is a subsequence of the calls (None without a gold path)."""
    if not gold:
        return None
    it = iter(calls)
    return all(any(c == g for c in it) for g in gold)


def extra_calls(calls: Sequence[str], gold: Sequence[str]) -> int:
    """Calls beyond the gold path's length (RestGPT's delta solution length, per episode)."""
    return max(0, len(calls) - len(gold))


MECHANISM = ("revise_verdicts", "revisions", "plans_changed", "reroutes", "retries", "retries_fixed")


def _plan_key(e: ModelCallEvent) -> str | None:
    """A grounding turn's plan as (tool, arguments) text, or None when it gave no usable plan."""
    import json

    from .prompts import parse_plan

    if e.error or not e.output.content:
        return None
    try:
        plan, _ = parse_plan(json.loads(e.output.content))
    except ValueError:
        return None
    return None if plan is None else json.dumps([plan.tool, plan.arguments, plan.answer], sort_keys=True)


def _ran(e: CodeRunEvent) -> bool:
    return e.error is None and e.limit is None and bool(e.code) and e.result not in (None, "", [], {})


def mechanism(traj: Trajectory) -> dict[str, int]:
    """What review (or compiler feedback) did in a ConAgents trajectory: verdicts that asked for a change,
    plans revised (and how many of those changed the tool or arguments), reroutes of execution feedback to
    grounding, code rewrites for the same step (and how many ran where the code before had failed)."""
    counts = dict.fromkeys(MECHANISM, 0)
    if not (traj.agent or "").startswith("conagents"):
        return counts
    last_plan: str | None = None
    pending_revision: str | None = None
    revising = False
    run_since_plan = False
    last_run_ok = True
    pending_fix = False
    for e in traj.events:
        if isinstance(e, ReviewEvent) and e.verdict == "revise":
            counts["revise_verdicts"] += 1
            if e.target == "plan":
                counts["revisions"] += 1
                revising, pending_revision = True, last_plan
            elif e.route == "grounding":
                counts["reroutes"] += 1
        elif isinstance(e, ModelCallEvent) and e.role == "grounding":
            key = _plan_key(e)
            if revising and key is not None and key != pending_revision:
                counts["plans_changed"] += 1
            revising = False
            last_plan, run_since_plan = key, False
        elif isinstance(e, ModelCallEvent) and e.role == "execution":
            if run_since_plan:
                counts["retries"] += 1
                pending_fix = not last_run_ok
        elif isinstance(e, CodeRunEvent):
            ok = _ran(e)
            if pending_fix and ok:
                counts["retries_fixed"] += 1
            pending_fix, last_run_ok, run_since_plan = False, ok, True
    return counts


def episode_row(traj: Trajectory, *, stop: str | None = None, wall_seconds: float | None = None) -> EpisodeRow:
    """The figures of one finished trajectory."""
    totals = traj.compute_totals(traj.totals.seconds if wall_seconds is None else wall_seconds)
    attempts, start = trials(traj)
    calls = called_from(traj, start)
    gold = list(traj.gold_path)
    outcome = traj.outcome
    answered = traj.answer is not None
    model_events = [e for e in traj.events if isinstance(e, ModelCallEvent)]
    failed_turns = sum(1 for e in model_events if e.error)
    model_seconds = sum(e.latency for e in model_events)
    mech = mechanism(traj)
    return EpisodeRow(
        agent=traj.agent or "", task=traj.id, seed=traj.seed or 0,
        success=bool(outcome.success) if outcome is not None else False,
        reason=outcome.reason if outcome is not None else "",
        answered=answered, stop=stop or ("answer" if answered else "no_answer"), calls=calls, gold_path=gold,
        cpr_lcs=correct_path_lcs(calls, gold, answered=answered), cpr_contains=contains_path(calls, gold),
        extra_calls=extra_calls(calls, gold), turns=totals.turns, model_calls=totals.model_calls,
        reviews=totals.reviews, code_runs=totals.code_runs, tool_calls=totals.tool_calls, failed_turns=failed_turns,
        prompt_tokens=totals.usage.prompt_tokens, completion_tokens=totals.usage.completion_tokens,
        model_seconds=round(model_seconds, 6), wall_seconds=round(totals.seconds, 6),
        cpr_f1=correct_path_f1(calls, gold), attempts=attempts, counters=agent_counters(traj),
        answer_in_view=view_flag(traj, "answer_in_view"), answer_in_results=view_flag(traj, "answer_in_results"),
        revise_verdicts=mech["revise_verdicts"], revisions=mech["revisions"],
        plans_changed=mech["plans_changed"], reroutes=mech["reroutes"], retries=mech["retries"],
        retries_fixed=mech["retries_fixed"],
    )


def view_flag(traj: Trajectory, key: str) -> bool | None:
    """``answer_in_view`` / ``answer_in_results`` from the outcome's ``view`` details (None when absent)."""
    info = traj.outcome.details.get("view") if traj.outcome is not None else None
    value = info.get(key) if isinstance(info, dict) else None
    return value if isinstance(value, bool) else None


def crash_row(agent: str, task: str, seed: int, gold_path: Sequence[str], error: str = "") -> EpisodeRow:
    """A crashed episode as a row (see the module docstring): not solved, no answer, no call, so every rate
    counts it as a failure (path rates 0 where the task has a gold path); ``stop`` is :data:`CRASHED`."""
    gold = list(gold_path)
    return EpisodeRow(agent=agent, task=task, seed=seed, success=False, reason=f"crashed: {error}" if error else
                      "crashed", answered=False, stop=CRASHED, calls=[], gold_path=gold,
                      cpr_lcs=correct_path_lcs([], gold, answered=False), cpr_contains=contains_path([], gold),
                      cpr_f1=correct_path_f1([], gold), attempts=0)


def is_crash(row: EpisodeRow) -> bool:
    """Whether ``row`` stands for a crashed episode (:func:`crash_row`)."""
    return row.stop == CRASHED


def agent_counters(traj: Trajectory) -> dict[str, int]:
    """The agent's own counters from the outcome's details (empty when it kept none)."""
    info = traj.outcome.details.get("counters") if traj.outcome is not None else None
    if not isinstance(info, dict):
        return {}
    return {str(k): int(v) for k, v in info.items() if isinstance(v, int) and not isinstance(v, bool)}


def trials(traj: Trajectory) -> tuple[int, int]:
    """(trials used, index of the first event of the last trial), from the outcome's ``attempts``."""
    info = traj.outcome.details.get("attempts") if traj.outcome is not None else None
    if isinstance(info, dict):
        used, start = info.get("used"), info.get("last_start")
        if isinstance(used, int) and isinstance(start, int) and used >= 1:
            return used, start
    return 1, 0


def called_from(traj: Trajectory, start: int) -> list[str]:
    """The tools called from event ``start`` on, in order (direct calls and calls made by code)."""
    out: list[str] = []
    for e in traj.events[start:]:
        if isinstance(e, ToolCallEvent):
            out.append(e.call.name)
        elif isinstance(e, CodeRunEvent):
            out.extend(e.tool_calls)
    return out


def correct_path_f1(calls: Sequence[str], gold: Sequence[str]) -> float | None:
    """The paper's correct path rate (ConAgents, section 5.1): F1 between the generated and the gold tool
    sequences, taken as multisets (precision over the calls, recall over the gold path); None without a gold
    path."""
    from collections import Counter

    if not gold:
        return None
    made, want = Counter(calls), Counter(gold)
    hit = sum((made & want).values())
    if not hit:
        return 0.0
    precision, recall = hit / sum(made.values()), hit / sum(want.values())
    return 2 * precision * recall / (precision + recall)


def pass_hat_k(trials: Sequence[tuple[int, int]], k: int) -> float | None:
    """tau-bench's pass^k: mean over tasks of C(c, k) / C(n, k), for tasks with n >= k trials (``trials``
    holds (n, c) per task); None when no task has k trials."""
    values = [comb(c, k) / comb(n, k) for n, c in trials if n >= k]
    return sum(values) / len(values) if values else None


# ------------------------------------------------------------------------------------------------ columns

COLUMNS = ("episodes", "success", "has_path", "cpr_lcs", "cpr_f1", "contains", "extra", "tokens", "turns",
           "model_calls", "reviews", "tool_calls", "failed_turns", "model_seconds", "wall_seconds", "answered",
           *MECHANISM, "acted", "acted_success", "attempts", "attempts_solved", "crashed", "finished")


def task_columns(rows: Sequence[EpisodeRow], tasks: Sequence[str]) -> dict[str, np.ndarray]:
    """Per-task sums over each task's episodes (one row per task, in ``tasks`` order), plus ``n`` = 1."""
    by_task: dict[str, list[EpisodeRow]] = {t: [] for t in tasks}
    for r in rows:
        if r.task in by_task:
            by_task[r.task].append(r)
    cols: dict[str, list[float]] = {c: [] for c in ("n", *COLUMNS)}
    for t in tasks:
        rs = by_task[t]
        with_path = [r for r in rs if r.cpr_lcs is not None]
        cols["n"].append(1.0)
        cols["episodes"].append(len(rs))
        crashed = sum(1 for r in rs if is_crash(r))
        cols["crashed"].append(crashed)
        cols["finished"].append(len(rs) - crashed)
        cols["success"].append(sum(r.success for r in rs))
        cols["answered"].append(sum(r.answered for r in rs))
        cols["has_path"].append(len(with_path))
        cols["cpr_lcs"].append(sum(r.cpr_lcs or 0.0 for r in with_path))
        cols["cpr_f1"].append(sum(r.cpr_f1 or 0.0 for r in with_path))
        for m in MECHANISM:
            cols[m].append(sum(getattr(r, m) for r in rs))
        acted = [r for r in rs if acted_on(r)]
        cols["acted"].append(len(acted))
        cols["acted_success"].append(sum(r.success for r in acted))
        cols["contains"].append(sum(bool(r.cpr_contains) for r in with_path))
        cols["attempts"].append(sum(r.attempts for r in rs))
        cols["attempts_solved"].append(sum(r.attempts for r in rs if r.success))
        cols["extra"].append(sum(r.extra_calls for r in rs if r.success))
        cols["tokens"].append(sum(r.tokens for r in rs))
        cols["turns"].append(sum(r.turns for r in rs))
        cols["model_calls"].append(sum(r.model_calls for r in rs))
        cols["reviews"].append(sum(r.reviews for r in rs))
        cols["tool_calls"].append(sum(r.tool_calls for r in rs))
        cols["failed_turns"].append(sum(r.failed_turns for r in rs))
        cols["model_seconds"].append(sum(r.model_seconds for r in rs))
        cols["wall_seconds"].append(sum(r.wall_seconds for r in rs))
    return {k: np.asarray(v, dtype=float) for k, v in cols.items()}


def _ratio(a: Any, b: Any) -> Any:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1.0), np.nan)


def acted_on(row: EpisodeRow) -> bool:
    """Whether review (or compiler feedback) changed anything in the episode: a revision, reroute or retry."""
    return bool(row.revisions or row.reroutes or row.retries)


HEADLINE = ("success_rate", "correct_path_f1", "correct_path_lcs", "correct_path_contains", "extra_calls",
            "tokens_per_solved")
PATH_RATES = {
    "correct_path_f1": "the paper's correct path rate: F1 of the called tools against the gold path",
    "correct_path_lcs": "the authors' code: LCS of calls + finish and gold + finish, over the gold length + 1",
    "correct_path_contains": "RestBench/RestGPT: the gold path is a subsequence of the calls",
}
"""The three path rates reported side by side, and what each one is."""


def statistic(s: Mapping[str, Any]) -> dict[str, Any]:
    """Metrics from column sums (each may carry a leading batch axis of bootstrap replicates)."""
    return {
        "success_rate": _ratio(s["success"], s["episodes"]),
        "correct_path_lcs": _ratio(s["cpr_lcs"], s["has_path"]),
        "correct_path_f1": _ratio(s["cpr_f1"], s["has_path"]),
        "correct_path_contains": _ratio(s["contains"], s["has_path"]),
        "extra_calls": _ratio(s["extra"], s["success"]),
        "tokens_per_solved": _ratio(s["tokens"], s["success"]),
        # what an episode cost: over the episodes that finished (a crash's cost is unknown)
        "tokens": _ratio(s["tokens"], s["finished"]),
        "turns": _ratio(s["turns"], s["finished"]),
        "model_calls": _ratio(s["model_calls"], s["finished"]),
        "reviews": _ratio(s["reviews"], s["finished"]),
        "tool_calls": _ratio(s["tool_calls"], s["finished"]),
        "failed_turns": _ratio(s["failed_turns"], s["finished"]),
        "answered_rate": _ratio(s["answered"], s["episodes"]),
        "crash_rate": _ratio(s["crashed"], s["episodes"]),
        "model_seconds": _ratio(s["model_seconds"], s["finished"]),
        "wall_seconds": _ratio(s["wall_seconds"], s["finished"]),
        "attempts": _ratio(s["attempts"], s["finished"]),
        "attempts_when_solved": _ratio(s["attempts_solved"], s["success"]),
    }


def _num(x: Any) -> float | None:
    v = float(x)
    return None if np.isnan(v) else round(v, 6)


def agent_summary(rows: Sequence[EpisodeRow], tasks: Sequence[str], *, seeds: int = 1, n_boot: int = 1000,
                  seed: int = 0, key: str = "") -> dict[str, Any]:
    """Every figure of one agent over ``tasks`` (its episodes ``rows``): means, CIs, pass^k, stop reasons."""
    from ..eval.stats import bootstrap_ci

    cols = task_columns(rows, tasks)
    sums = {k: v.sum() for k, v in cols.items()}
    values = {k: _num(v) for k, v in statistic(sums).items()}
    cis = bootstrap_ci(cols, lambda s: {k: v for k, v in statistic(s).items() if k in HEADLINE},
                       n_boot=n_boot, seed=seed, key=key) if rows and n_boot > 0 else {}
    trials = [(int(n), int(c)) for n, c in zip(cols["episodes"], cols["success"], strict=True) if n > 0]
    stops: dict[str, int] = {}
    for r in rows:
        stops[r.stop] = stops.get(r.stop, 0) + 1
    return {
        "failures": failure_reasons(rows),
        "episodes": len(rows),
        "crashed": int(sums["crashed"]),
        "tasks": int(sum(1 for n in cols["episodes"] if n > 0)),
        "successes": int(sums["success"]),
        **values,
        "ci95": {k: [round(v[0], 6), round(v[1], 6)] if v is not None else None for k, v in cis.items()},
        "pass_hat_k": {str(k): _num(p) if (p := pass_hat_k(trials, k)) is not None else None
                       for k in range(1, max(1, seeds) + 1)},
        "success_by_attempt": success_by_attempt(rows),
        "stops": dict(sorted(stops.items())),
        "mechanism": {
            "reviews": int(sums["reviews"]), **{m: int(sums[m]) for m in MECHANISM},
            "episodes_acted": int(sums["acted"]),
            "success_when_acted": _num(_ratio(sums["acted_success"], sums["acted"])),
            "success_when_not": _num(_ratio(sums["success"] - sums["acted_success"], sums["episodes"] - sums["acted"])),
        },
        "view": view_summary(rows),
        "counters": _sum_counters(rows),
        "prompt_tokens": int(sum(r.prompt_tokens for r in rows)),
        "completion_tokens": int(sum(r.completion_tokens for r in rows)),
    }


def failure_reasons(rows: Sequence[EpisodeRow]) -> dict[str, int]:
    """Why the episodes that failed failed, most frequent first: ``stop:<why>`` when the episode ended before
    an answer (``stop:step_cap``, ``stop:call_cap``, ``stop:no_plan``, ...), else ``checker:<its reason>`` (the
    answer was given and the environment's checker rejected it). A checker's reason is counted without what is
    particular to its task (bracketed and quoted values become ``...``, remarks in parentheses are left out, at
    most 120 characters), so the same failure on two tasks counts twice; ``per_task`` keeps each whole reason."""
    import re

    counts: dict[str, int] = {}
    for r in rows:
        if r.success:
            continue
        if r.stop != "answer":
            key = f"stop:{r.stop}"
        else:
            reason = re.sub(r"\[[^\]]*\]", "[...]", r.reason or "no reason given")
            reason = re.sub(r"(?<!\w)'[^']*'(?!\w)|\"[^\"]*\"", "'...'", reason)
            reason = " ".join(re.sub(r"\s*\([^)]*\)", "", reason).split())
            key = f"checker:{reason[:117] + '...' if len(reason) > 120 else reason}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def view_summary(rows: Sequence[EpisodeRow]) -> dict[str, Any]:
    """Whether the agent saw the answer: of the episodes whose tool results held the values the checker
    expects (``answer_in_results``), how many showed them to the agent (``answer_in_view``), and the rate."""
    held = [r for r in rows if r.answer_in_results]
    seen = sum(1 for r in held if r.answer_in_view)
    return {"answer_in_results": len(held), "answer_in_view": seen,
            "answer_in_view_rate": _num(_ratio(seen, len(held)))}


def success_by_attempt(rows: Sequence[EpisodeRow]) -> dict[str, float | None]:
    """The success rate within k trials, for k = 1 .. the most trials an episode used (the paper's @N reports
    success with the trials it took): an episode solved at trial j counts from k = j on (a retrying agent stops
    at the trial that solves the task, so its ``attempts`` is that trial); every episode, crashes included, is
    in the denominator."""
    most = max((r.attempts for r in rows), default=1)
    return {str(k): _num(_ratio(sum(1 for r in rows if r.success and r.attempts <= k), len(rows)))
            for k in range(1, max(1, most) + 1)}


def _sum_counters(rows: Sequence[EpisodeRow]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        for k, v in r.counters.items():
            out[k] = out.get(k, 0) + v
    return dict(sorted(out.items()))


PAIRED = ("success_rate", "correct_path_f1", "correct_path_lcs", "correct_path_contains", "tokens")


def paired(rows_a: Sequence[EpisodeRow], rows_b: Sequence[EpisodeRow], tasks: Sequence[str], *,
           n_boot: int = 1000, seed: int = 0, key: str = "") -> list[dict[str, Any]]:
    """A - B on ``tasks`` (which both agents finished): per metric the two values, the difference, its
    paired bootstrap 95% CI and the paired randomization p-value."""
    from ..eval.stats import paired_compare

    if not tasks:
        return []
    ca, cb = task_columns(rows_a, tasks), task_columns(rows_b, tasks)
    results = paired_compare(ca, cb, lambda s: {k: v for k, v in statistic(s).items() if k in PAIRED},
                             n_boot=n_boot, n_perm=n_boot, seed=seed, key=key)
    return [{"metric": r.metric, "a": _r(r.a), "b": _r(r.b), "diff": _r(r.diff), "ci95": [_r(r.ci_low), _r(r.ci_high)]
             if r.ci_low is not None else None, "p_value": _r(r.p_value), "tasks": len(tasks)} for r in results]


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def per_task(rows: Sequence[EpisodeRow]) -> list[dict[str, Any]]:
    """One row per (task, agent): successes of episodes, mean correct path rates, calls, tokens."""
    groups: dict[tuple[str, str], list[EpisodeRow]] = {}
    for r in rows:
        groups.setdefault((r.task, r.agent), []).append(r)
    out = []
    for (task, agent), rs in groups.items():
        with_path = [r for r in rs if r.cpr_lcs is not None]
        out.append({
            "task": task, "agent": agent, "episodes": len(rs), "successes": sum(r.success for r in rs),
            "correct_path_f1": round(sum(r.cpr_f1 or 0 for r in with_path) / len(with_path), 6) if with_path else None,
            "correct_path_lcs": round(sum(r.cpr_lcs or 0 for r in with_path) / len(with_path), 6) if with_path else None,
            "correct_path_contains": round(sum(bool(r.cpr_contains) for r in with_path) / len(with_path), 6)
            if with_path else None,
            "calls": round(sum(len(r.calls) for r in rs) / len(rs), 3),
            "gold_length": len(rs[0].gold_path),
            "tokens": round(sum(r.tokens for r in rs) / len(rs), 1),
            "stops": sorted({r.stop for r in rs}),
            "reason": rs[0].reason,
        })
    return out


def metrics_document(rows_by_agent: Mapping[str, Sequence[EpisodeRow]], tasks: Sequence[str], *, seeds: int = 1,
                     n_boot: int = 1000, seed: int = 0, meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The whole metrics document of an agent run: per agent (:func:`agent_summary`), a comparison table, a
    paired comparison of every pair of agents on the tasks both ran, the per-task table, and the turn-limit
    sweep (Figure 3) when the run has ConAgents variants with other alpha / beta. Crashed episodes are rows too
    (:func:`crash_row`): failures in every rate, counted per agent as ``crashed`` (``failed``: the same count,
    the name of earlier documents)."""
    agents: dict[str, Any] = {}
    for name, rows in rows_by_agent.items():
        summary = agent_summary(rows, tasks, seeds=seeds, n_boot=n_boot, seed=seed, key=name)
        summary["failed"] = summary["crashed"]
        agents[name] = summary
    comparison = [{"agent": name, **{k: s.get(k) for k in (
        "episodes", "crashed", "success_rate", "correct_path_f1", "correct_path_lcs", "correct_path_contains", "extra_calls",
        "turns", "attempts",
        "model_calls", "tokens", "tokens_per_solved", "model_seconds", "wall_seconds")}} for name, s in agents.items()]
    names = list(rows_by_agent)
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = [t for t in tasks if _finished(rows_by_agent[a], t, seeds) and _finished(rows_by_agent[b], t, seeds)]
            pairs.append({"a": a, "b": b, "metrics": paired(rows_by_agent[a], rows_by_agent[b], common,
                                                            n_boot=n_boot, seed=seed, key=f"{a}|{b}"),
                          "flips": flips(rows_by_agent[a], rows_by_agent[b], common)})
    all_rows = [r for rs in rows_by_agent.values() for r in rs]
    return {
        "schema": "taskbench.agents.metrics/1",
        **dict(meta or {}),
        "tasks": len(tasks),
        "seeds": seeds,
        "agents": agents,
        "comparison": comparison,
        "paired": pairs,
        "path_rates": dict(PATH_RATES),
        "per_task": per_task(all_rows),
        "turns_sweep": turns_sweep(agents),
    }


def flips(rows_a: Sequence[EpisodeRow], rows_b: Sequence[EpisodeRow], tasks: Sequence[str]) -> dict[str, int]:
    """Episodes (task, seed) of ``tasks`` that both agents ran whose outcome differs: solved by A only, by B
    only (for an agent and its ablation: the outcomes review flipped, each way)."""
    wanted = set(tasks)
    a = {(r.task, r.seed): r.success for r in rows_a if r.task in wanted}
    b = {(r.task, r.seed): r.success for r in rows_b if r.task in wanted}
    both = a.keys() & b.keys()
    return {"episodes": len(both), "a_only": sum(1 for k in both if a[k] and not b[k]),
            "b_only": sum(1 for k in both if b[k] and not a[k])}


def _finished(rows: Sequence[EpisodeRow], task: str, seeds: int) -> bool:
    return sum(1 for r in rows if r.task == task) >= seeds


def turns_sweep(agents: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Success against the turn limits: one entry per ConAgents agent (with its alpha and beta), for the
    paper's Figure 3."""
    from .config import parse_agent

    out = []
    for name, summary in agents.items():
        if not name.startswith("conagents"):
            continue
        try:
            spec = parse_agent(name)
        except Exception:  # a name this version does not know: not part of the sweep
            continue
        out.append({"agent": name, "protocol": spec.base, "ablation": spec.ablation, "alpha": spec.alpha,
                    "beta": spec.beta, "success_rate": summary.get("success_rate"),
                    "correct_path_f1": summary.get("correct_path_f1"),
                    "correct_path_lcs": summary.get("correct_path_lcs")})
    return out


__all__ = [
    "MECHANISM",
    "PATH_RATES",
    "EpisodeRow",
    "acted_on",
    "agent_counters",
    "called_from",
    "CRASHED",
    "crash_row",
    "is_crash",
    "trials",
    "correct_path_f1",
    "flips",
    "failure_reasons",
    "mechanism",
    "agent_summary",
    "contains_path",
    "correct_path_lcs",
    "episode_row",
    "extra_calls",
    "lcs_length",
    "metrics_document",
    "paired",
    "pass_hat_k",
    "per_task",
    "statistic",
    "success_by_attempt",
    "task_columns",
    "turns_sweep",
    "view_flag",
    "view_summary",
]
