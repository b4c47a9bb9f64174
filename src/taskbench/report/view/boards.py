"""The leaderboard across runs and the paired comparison of two entries, from the index.

The board reads each entry's metrics through the leaderboard's own reader (:func:`~taskbench.report.leaderboard
.entry_from_json`: one vocabulary for strict, compat and reference layouts) and sends, per entry, every
group's values, 95% CIs and sample counts, so the page can switch group, source and sort order without asking
again. The glossary is the metric table's (:mod:`taskbench.eval.metrics`: label, meaning, direction) and the
small-n threshold; :func:`legend` names every metric and group the pages show with the key
`evaluate` and `compare` write for it.

The comparison is the evaluator's, in two halves: each entry is scored once (:func:`~taskbench.eval.api
.score_strict`, the code behind `taskbench compare`, a chunk of :data:`SCORE_CHUNK` samples at a time read by
offset from the sample index, so memory does not grow with the files) and its per-sample columns are kept
(:class:`Scored`, about 16 MB at 28,271 samples); a pair is then compared on the samples both predicted
(:func:`~taskbench.eval.api.compare_columns`: paired bootstrap CIs and randomization p-values, the same
numbers `taskbench compare` gives on those samples). Both halves run in a child process (:func:`run_worker`:
the paired bootstrap of 28,271 samples x 145 columns needs about 200 MB for a moment, which is returned when
the child ends instead of staying in the server), started by one background thread (:class:`CompareJobs`), one
job at a time, shared by identical requests; a request waits a moment and otherwise answers with the job's
progress, and the page asks again.
"""

from __future__ import annotations

import queue
import resource
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InputError, TaskbenchError
from .cache import Memo, release_memory
from .files import RunFile, confine
from .index import ViewIndex
from .samples import SampleTable, _read_many

__all__ = ["MAX_BOARD_ROWS", "CompareJobs", "ScoreTask", "Scored", "board", "compare", "glossary", "legend", "run_worker"]

MAX_BOARD_ROWS = 5000
"""Most (run, model, dataset) rows on one board."""

COMPARE_BOOT = 1000
"""Bootstrap replicates and randomization permutations of a comparison (as `taskbench compare`)."""

COMPARE_METRICS = ("f1", "ed", "link", "argument", "rouge")
"""Metric families compared (`taskbench compare`'s default)."""

SCORE_CHUNK = 2000
"""Samples scored at a time when an entry is scored for a comparison."""


def glossary() -> dict[str, Any]:
    """Every board metric: key, column header, meaning, and whether lower is better (the metric table's); the
    small-n threshold."""
    from ...eval.metrics import find_metric
    from ..leaderboard import SMALL_N, board_metrics

    metrics = []
    for k, h in board_metrics():
        m = find_metric(k)
        metrics.append({"key": k, "label": h, "meaning": m.meaning if m else "",
                        "lower_is_better": bool(m and m.lower_is_better)})
    return {"metrics": metrics, "small_n": SMALL_N, "legend": legend()}


LEGEND_KEYS: tuple[str, ...] = (
    "node_micro_f1", "node_micro_precision", "node_micro_recall", "node_macro_f1", "node_macro_precision",
    "node_macro_recall", "link_f1", "link_precision", "link_recall", "argument_name_f1", "argument_value_f1",
    "edit_distance", "chain_edit_distance", "node_set_accuracy", "edge_set_accuracy", "graph_accuracy",
    "step_rougeL", "step_rouge1", "step_rouge2", "step_rougeLsum", "step_bertscore_f1", "parse_failure_rate",
    "call_failure_rate", "missing_rate",
)
"""The metrics the pages name, in the legend's order (then every added metric); labels, meanings and
directions are the metric table's, except ``chain_edit_distance`` (a figure of the strict result, not a group
metric)."""

CHAIN_NED = {"key": "chain_edit_distance", "label": "NED (chains)",
             "meaning": "NED over the chain samples only (what `evaluate` prints as \"NED on chains\", the paper's "
                        "number); LOWER is better", "lower_is_better": True}


def _group_label(key: str) -> str:
    split, _, n = key.partition("_")
    names = {"overall": "all samples", "single": "single tool", "chain": "chains", "dag": "DAGs"}
    if n == "overall":
        return names.get(split, split)
    tools = f"{n} tool{'s' if n != '1' else ''}"
    return tools if split == "overall" else f"{names.get(split, split)}, {tools}"


def legend() -> dict[str, Any]:
    """Every metric and group the pages show: its label, the key `taskbench evaluate` and `taskbench compare`
    write (JSON) and print (compare's table), what it measures and which way is better."""
    from ...eval.metrics import added_metrics, metric_table

    table = metric_table()
    metrics = []
    for k in [*LEGEND_KEYS, *(m.key for m in added_metrics() if m.key not in LEGEND_KEYS)]:
        if k == CHAIN_NED["key"]:
            metrics.append(dict(CHAIN_NED))
        elif k in table:
            m = table[k]
            metrics.append({"key": k, "label": m.label, "meaning": m.meaning, "lower_is_better": m.lower_is_better})
    groups = [{"key": g, "label": _group_label(g)} for g in
              ("overall_overall", "single_overall", "chain_overall", "dag_overall", *(f"overall_{n}" for n in range(1, 11)))]
    return {"metrics": metrics, "groups": groups,
            "note": "values are percentages of the samples in the group; the key is the name in the JSON that "
                    "`taskbench evaluate -o` and `taskbench compare` write, and in compare's terminal table"}


def board(index: ViewIndex, *, dataset: str | None = None) -> dict[str, Any]:
    """Rows of every scored entry (optionally of one dataset), strict and compat, every group."""
    from ..leaderboard import board_metrics, entry_from_json

    keys = [k for k, _ in board_metrics()]
    rows: list[dict[str, Any]] = []
    datasets: set[str] = set()
    problems: list[str] = []
    for run in index.runs.values():
        for e in run.entries:
            datasets.add(e.dataset)
            if dataset and e.dataset != dataset:
                continue
            for source in ("strict", "compat"):
                doc = (e.metrics_doc or {}).get(source)
                if not isinstance(doc, dict):
                    continue
                try:
                    be = entry_from_json(doc, model=e.model, source=source)
                except InputError as exc:
                    problems.append(f"{run.id} {e.key} {source}: {exc}")
                    continue
                groups = {g: {"n": be.samples(g),
                              **{m: [be.value(m, g), list(iv) if (iv := be.interval(m, g)) else None] for m in keys}}
                          for g in be.groups}
                rows.append({"run": run.id, "run_title": run.title[:200], "date": run.date, "model": e.model[:200],
                             "dataset": e.dataset[:200], "entry": e.key[:400], "source": source, "groups": groups,
                             "warnings": [w[:500] for w in be.warnings[:10]]})
                if len(rows) >= MAX_BOARD_ROWS:
                    problems.append(f"more than {MAX_BOARD_ROWS} rows: the rest are left out")
                    return {"rows": rows, "datasets": sorted(datasets), "problems": problems, **glossary()}
    return {"rows": rows, "datasets": sorted(datasets), "problems": problems, **glossary()}


@dataclass
class Scored:
    """One entry scored by the evaluator: per predicted gold sample (gold order) its split, tool count and the
    per-sample columns the metrics are sums of (counts kept as float32, which holds them exactly; the rest
    float64), and the facts coverage warnings need."""

    ids: list[str]
    splits: np.ndarray
    n_tools: np.ndarray
    columns: dict[str, np.ndarray]
    predicted_nodes: np.ndarray
    foreign_nodes: np.ndarray
    gold_ids: set[str]
    problems: list[str]

    @property
    def nbytes(self) -> int:
        return sum(int(v.nbytes) for v in self.columns.values())


def _compact(column: np.ndarray) -> np.ndarray:
    """``column`` as float32 when that holds every value exactly (counts, flags), else as it is."""
    small = column.astype(np.float32)
    return small if np.array_equal(small.astype(column.dtype), column) else column


@dataclass
class ScoreTask:
    """What scoring one entry needs, picklable for the comparison worker: its gold and predictions files, the
    offsets of the lines of each predicted gold sample (gold order), and where its tool library is."""

    label: str
    gold: RunFile
    predictions: RunFile
    offsets: list[tuple[int, int]]
    gold_ids: set[str]
    data_path: Path
    dependency: str | None
    predicted: set[str]
    """Ids with a prediction (a parquet gold, which has no line offsets, is scored whole on these)."""

    @classmethod
    def of(cls, table: SampleTable, label: str) -> ScoreTask:
        entry = table.entry
        assert table.gold_file is not None and entry.predictions is not None and entry.data_path is not None
        return cls(label=label, gold=table.gold_file, predictions=entry.predictions,
                   offsets=[(r.gold_at, r.pred_at) for r in table.rows if r.gold_at is not None and r.pred_at is not None],
                   gold_ids={r.id for r in table.rows if r.gold_at is not None}, data_path=entry.data_path,
                   dependency=entry.dependency, predicted={r.id for r in table.rows if r.pred_at is not None})

    def library(self) -> Any:
        from ...dataset.layout import GRAPH_FILE, TOOL_FILE
        from ...graph.loaders import load_tool_library

        name = TOOL_FILE if (self.data_path / TOOL_FILE).exists() else GRAPH_FILE
        tool = confine(self.data_path / name, [self.data_path], what=name)
        if not tool.is_file():
            raise InputError(f"no {TOOL_FILE} in the dataset directory", path=self.data_path)
        return load_tool_library(tool.path, self.dependency, name=self.data_path.name)

    def run(self, progress: Callable[[int, int], None] | None = None) -> Scored:
        """The evaluator's per-sample scores, read by offset a chunk at a time (:data:`SCORE_CHUNK`)."""
        from ...eval.api import score_strict

        library = self.library()
        if self.gold.suffix == ".parquet":  # no line offsets: the whole file at once (hub datasets are small)
            return self._whole(library)
        ids: list[str] = []
        splits: list[np.ndarray] = []
        n_tools: list[np.ndarray] = []
        parts: dict[str, list[np.ndarray]] = {}
        nodes: list[int] = []
        foreign: list[int] = []
        problems: list[Any] = []
        for start in range(0, len(self.offsets), SCORE_CHUNK):
            chunk = self.offsets[start:start + SCORE_CHUNK]
            gold = _read_many(self.gold, [g for g, _ in chunk])
            pred = _read_many(self.predictions, [p for _, p in chunk])
            pairs = [(g, p) for g, p in zip(gold, pred, strict=True) if isinstance(g, dict) and isinstance(p, dict)]
            scored = score_strict([g for g, _ in pairs], [p for _, p in pairs], library, dependency=self.dependency,
                                  metrics=COMPARE_METRICS, gold_path=self.gold.path, gold_problems=problems)
            ids += scored.ids
            splits.append(scored.splits)
            n_tools.append(scored.n_tools)
            for k, v in scored.columns.items():
                parts.setdefault(k, []).append(_compact(v))
            nodes += [s.node[0] + s.node[1] for s in scored.scores]
            foreign += [len(s.hallucinated) for s in scored.scores]
            if progress is not None:
                progress(min(start + SCORE_CHUNK, len(self.offsets)), len(self.offsets))
        return Scored(ids=ids, splits=np.concatenate(splits) if splits else np.zeros(0, dtype=object),
                      n_tools=np.concatenate(n_tools) if n_tools else np.zeros(0, dtype=int),
                      columns={k: np.concatenate(v) for k, v in parts.items()},
                      predicted_nodes=np.asarray(nodes, dtype=np.int64), foreign_nodes=np.asarray(foreign, dtype=np.int64),
                      gold_ids=self.gold_ids, problems=[str(p) for p in problems[:20]])

    def _whole(self, library: Any) -> Scored:
        from ...dataset.layout import iter_raw_records
        from ...eval.api import score_strict

        problems: list[Any] = []
        scored = score_strict(iter_raw_records(self.gold.path), iter_raw_records(self.predictions.path), library,
                              dependency=self.dependency, metrics=COMPARE_METRICS, alignment_ids=self.predicted,
                              gold_path=self.gold.path, gold_problems=problems)
        return Scored(ids=scored.ids, splits=scored.splits, n_tools=scored.n_tools,
                      columns={k: _compact(v) for k, v in scored.columns.items()},
                      predicted_nodes=np.asarray([s.node[0] + s.node[1] for s in scored.scores], dtype=np.int64),
                      foreign_nodes=np.asarray([len(s.hallucinated) for s in scored.scores], dtype=np.int64),
                      gold_ids=set(scored.gold_ids), problems=[str(p) for p in problems[:20]])


def compare(sa: Scored, sb: Scored, names: tuple[str, str]) -> dict[str, Any]:
    """``A - B`` per group and metric with paired bootstrap CIs and randomization p-values, on the samples
    both entries scored."""
    from ...eval.api import COMPARE_SUBSET_HINT, compare_columns
    from ...eval.coverage import Coverage, coverage_warnings

    where = {sid: i for i, sid in enumerate(sb.ids)}
    ia = np.array([i for i, sid in enumerate(sa.ids) if sid in where], dtype=np.int64)
    ib = np.array([where[sa.ids[i]] for i in ia], dtype=np.int64)
    if not len(ia):
        return {"error": "the two entries have no predicted sample in common"}

    def kept(s: Scored, index: np.ndarray) -> dict[str, np.ndarray]:  # no copy when every row is kept in order
        whole = len(index) == len(s.ids) and bool((index == np.arange(len(index))).all())
        return s.columns if whole else {k: v[index] for k, v in s.columns.items()}

    common = [sa.ids[i] for i in ia]
    warnings: list[str] = []
    for name, s, rows in ((names[0], sa, ia), (names[1], sb, ib)):
        cov = Coverage(selected=common, gold_ids=s.gold_ids, predicted=set(s.ids),
                       predicted_nodes=int(s.predicted_nodes[rows].sum()), foreign_nodes=int(s.foreign_nodes[rows].sum()))
        warnings += [f"{name}: {w}" for w in coverage_warnings(cov, subset_hint=COMPARE_SUBSET_HINT)]
        warnings += [f"{name}: {p}" for p in s.problems]
    result = compare_columns(sa.splits[ia], sa.n_tools[ia], kept(sa, ia), kept(sb, ib), names=names,
                             splits=("overall", "single", "chain", "dag"), n_tools=("overall",),
                             metrics=COMPARE_METRICS, n_boot=COMPARE_BOOT, n_perm=COMPARE_BOOT, seed=0,
                             warnings=warnings)
    out = result.model_dump(mode="json")
    out["warnings"] = out.get("warnings", [])[:50]
    return out


def _worker(conn: Any, sides: list[ScoreTask | Scored], names: tuple[str, str]) -> None:
    """The comparison worker (a child process): score the sides not scored yet, sending each back as it is done
    (the server keeps it), then compare; progress lines as it goes."""
    try:
        scored: list[Scored] = []
        for i, side in enumerate(sides):
            if isinstance(side, Scored):
                scored.append(side)
                continue
            conn.send(("progress", f"scoring {side.label}: reading its tool library"))
            done = side.run(lambda n, total, side=side: conn.send(  # type: ignore[misc]
                ("progress", f"scoring {side.label}: {n:,} of {total:,} samples")))
            conn.send(("scored", i, done))
            scored.append(done)
        conn.send(("progress", f"paired bootstrap and randomization test ({COMPARE_BOOT:,} replicates each)"))
        result = compare(scored[0], scored[1], names)
        result["worker"] = {"peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                            "cpu_s": round(time.process_time(), 1)}
        conn.send(("done", result))
    except TaskbenchError as exc:
        conn.send(("done", {"error": str(exc)}))
    except Exception as exc:  # a bug: the page shows it, the server goes on
        conn.send(("done", {"error": f"the comparison failed: {type(exc).__name__}: {exc}"}))
    finally:
        conn.close()


def run_worker(sides: list[ScoreTask | Scored], names: tuple[str, str], say: Callable[[str], None],
               keep: Callable[[int, Scored], None]) -> dict[str, Any]:
    """Score and compare in a child process (spawned: its memory, up to a few hundred MB at the released size,
    is returned when it ends, and the server's stays what its pages need); ``keep(i, scored)`` receives each
    side it scored."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_worker, args=(child, sides, names), name="taskbench-view-compare", daemon=True)
    proc.start()
    child.close()
    result: dict[str, Any] | None = None
    try:
        while result is None:
            if parent.poll(0.5):
                try:
                    msg = parent.recv()
                except EOFError:
                    break
                if msg[0] == "progress":
                    say(str(msg[1]))
                elif msg[0] == "scored":
                    keep(int(msg[1]), msg[2])
                elif msg[0] == "done":
                    result = msg[1]
            elif not proc.is_alive():
                break
    finally:
        parent.close()
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
            proc.join()
    if result is None:
        return {"error": f"the comparison worker ended without an answer (exit code {proc.exitcode})"}
    return result


class CompareJobs:
    """Comparisons run from one background thread, one at a time: a job scores what it needs (each entry once,
    kept in :attr:`scored`), then compares (both in a child process, :func:`run_worker`); its result is kept
    (:attr:`results`). A request for a job that is running or queued joins it, it never starts a second one."""

    def __init__(self, keep_scored: int = 4, keep_results: int = 32) -> None:
        self.scored: Memo[Scored] = Memo(keep=keep_scored)
        self.results: Memo[dict[str, Any]] = Memo(keep=keep_results)
        self._jobs: dict[Hashable, dict[str, Any]] = {}
        self._queue: queue.Queue[Hashable] = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, key: Hashable, work: Callable[[Callable[[str], None]], dict[str, Any]]) -> dict[str, Any]:
        """The job of ``key`` (its result when done), queued when it is new; ``work(say)`` computes it and
        calls ``say(text)`` with its progress."""
        done = self.results.peek(key)
        if done is not None:
            return {"state": "done", "result": done}
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                job = {"state": "queued", "progress": "waiting for the comparisons before it", "work": work,
                       "event": threading.Event(), "result": None}
                self._jobs[key] = job
                self._queue.put(key)
                if self._thread is None or not self._thread.is_alive():
                    self._thread = threading.Thread(target=self._run, name="view-compare", daemon=True)
                    self._thread.start()
            return job

    def wait(self, key: Hashable, job: dict[str, Any], timeout: float) -> dict[str, Any]:
        """The state of ``job`` (as :meth:`submit` gave it) after waiting at most ``timeout`` seconds for it to
        finish: state, progress, result, and how many jobs are ahead of it."""
        if job["state"] == "done" and "event" not in job:
            return job
        job["event"].wait(timeout)
        with self._lock:
            ahead = list(self._jobs).index(key) if key in self._jobs else 0
        return {"state": job["state"], "progress": job["progress"], "result": job["result"], "ahead": ahead}

    def _run(self) -> None:
        while True:
            try:
                key = self._queue.get(timeout=30)
            except queue.Empty:
                with self._lock:
                    if self._queue.empty():
                        self._thread = None
                        return
                continue
            with self._lock:
                job = self._jobs[key]
                job["state"] = "running"

            def say(text: str, job: dict[str, Any] = job) -> None:
                job["progress"] = text

            try:
                result = job["work"](say)
            except TaskbenchError as exc:
                result = {"error": str(exc)}
            except Exception as exc:  # a bug must not kill the worker: the page shows it
                result = {"error": f"the comparison failed: {type(exc).__name__}: {exc}"}
            if "error" not in result:
                self.results.put(key, result)
            release_memory()  # the scores the worker sent back were unpickled here
            with self._lock:
                job["result"], job["state"] = result, "done"
                job["event"].set()
                self._jobs.pop(key, None)

    def clear(self) -> None:
        self.scored.clear()
        self.results.clear()
