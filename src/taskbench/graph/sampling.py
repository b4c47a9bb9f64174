"""Seeded subgraph sampling: the plan the data engine turns into samples (TaskBench paper, section 2.3).

Each plan entry picks a mode (``single`` / ``chain`` / ``dag``, weights 3:7:8) and, for chain and dag, a
number of tools (2..10, weights 0.1, 0.2, 0.3, 0.2, 0.1, 0.05, 0.025, 0.025, 0.025; a dag has at least 3
tools, so a drawn 2 becomes 3), then grows a subgraph from a random start tool:

- ``single``: the start tool alone.
- ``chain``: grow at either end: prepend a predecessor of the head or append a successor of the tail (no tool
  twice). The links are the path.
- ``dag``: attach a predecessor or a successor of any chosen tool (pick a chosen tool uniformly among those
  that can still grow, then one of its candidates uniformly). In resource graphs a tool's incoming sampled
  links never exceed its input types: a predecessor p can be attached to u only through a type of u's
  ``input-type`` list not yet used by another incoming link (a multiset, as in the reference sampler). The
  links are the attachment edges (a tree, so the result is acyclic).

When the drawn size cannot be reached from the start tool (a dead end), the entry retries from the next tool
of a random permutation of all tools (drawn from the entry's own RNG, so retries are deterministic too). If no
start reaches the size (the graph is too small or too sparse), the largest subgraph found is kept and
``size`` records what was reached. A size larger than the graph is capped at the number of tools.

Determinism: entry ``i`` draws everything from ``random.Random(f"taskbench-plan:{seed}:{i}")`` (string seeds
are hashed with SHA-512, independent of PYTHONHASHSEED), so the plan is a pure function of (graph, seed, n,
weights): the same in any process and at any concurrency, and a longer plan starts with the shorter one.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from itertools import accumulate

from ..errors import ConfigError, InputError, did_you_mean
from ..schema import SampledSubgraph, ToolGraph, ToolLink

MODE_WEIGHTS: dict[str, float] = {"single": 3, "chain": 7, "dag": 8}
"""Default mode weights (single:chain:dag = 3:7:8)."""

SIZE_WEIGHTS: dict[int, float] = {2: 0.1, 3: 0.2, 4: 0.3, 5: 0.2, 6: 0.1, 7: 0.05, 8: 0.025, 9: 0.025, 10: 0.025}
"""Default weights of the number of tools for chain and dag entries."""

MIN_DAG_SIZE = 3
"""A dag has at least this many tools (a drawn smaller size is raised to it)."""

MODES = ("single", "chain", "dag")


def parse_weights(text: str, keys: tuple[str, ...] | None = None) -> dict[str, float]:
    """Parse ``"3,7,8"`` (values for ``keys`` in order) or ``"single=3,chain=7,dag=8"`` into a dict."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    out: dict[str, float] = {}
    try:
        if parts and all("=" in p for p in parts):
            for p in parts:
                k, v = p.split("=", 1)
                out[k.strip()] = float(v)
        elif keys is not None and len(parts) == len(keys):
            out = {k: float(v) for k, v in zip(keys, parts, strict=True)}
        else:
            want = f"{len(keys)} numbers ({','.join(keys)})" if keys else "key=value pairs"
            raise ConfigError(f"cannot parse weights {text!r}: expected {want}")
    except ValueError:
        raise ConfigError(f"cannot parse weights {text!r}: not a number") from None
    return out


def _check_weights(weights: Mapping[str, float] | Mapping[int, float], what: str) -> None:
    if not weights:
        raise ConfigError(f"{what} weights are empty")
    for key, w in weights.items():
        if not isinstance(w, (int, float)) or w < 0 or w != w or w == float("inf"):
            raise ConfigError(f"{what} weight for {key!r} must be a finite number >= 0, got {w!r}")
    total = sum(weights.values())
    if total <= 0:
        raise ConfigError(f"{what} weights must not all be zero")
    if total == float("inf"):  # each finite (1e308), their sum not: the draw could not be made
        raise ConfigError(f"{what} weights add up to more than a float holds; scale them down (they are ratios)")


class SubgraphSampler:
    """Samples plan entries from one graph. ``entry(i)`` depends only on (graph, seed, i, weights)."""

    def __init__(
        self,
        graph: ToolGraph,
        seed: int,
        *,
        mode_weights: Mapping[str, float] | None = None,
        size_weights: Mapping[int, float] | None = None,
    ) -> None:
        mode_weights = dict(MODE_WEIGHTS if mode_weights is None else mode_weights)
        size_weights = dict(SIZE_WEIGHTS if size_weights is None else size_weights)
        _check_weights(mode_weights, "mode")
        _check_weights(size_weights, "size")
        bad = [m for m in mode_weights if m not in MODES]
        if bad:
            raise ConfigError(f"unknown sampling mode {bad[0]!r} ({did_you_mean(bad[0], ('single', 'chain', 'dag'))})")
        for k in size_weights:
            if not isinstance(k, int) or isinstance(k, bool) or k < 1:
                raise ConfigError(f"size weights need integer sizes >= 1, got {k!r}")
        if not graph.nodes:
            raise InputError("cannot sample from a graph without tools")
        self.graph = graph
        self.seed = int(seed)
        self._modes = list(mode_weights)
        self._mode_cum = list(accumulate(mode_weights.values()))
        self._sizes = list(size_weights)
        self._size_cum = list(accumulate(size_weights.values()))
        self._names = [t.id for t in graph.nodes]
        pos = {name: i for i, name in enumerate(self._names)}
        n = len(self._names)
        self._succ: list[list[int]] = [[] for _ in range(n)]
        self._pred: list[list[int]] = [[] for _ in range(n)]
        self._type: dict[tuple[int, int], str | None] = {}
        self._link: dict[tuple[int, int], ToolLink] = {}
        for link in graph.links:
            a, b = pos.get(link.source), pos.get(link.target)
            if a is None or b is None or a == b or (a, b) in self._type:
                continue
            self._succ[a].append(b)
            self._pred[b].append(a)
            self._type[(a, b)] = link.type
            self._link[(a, b)] = link
        dep = graph.dependency_kind
        self._inputs: list[list[str]] | None = None
        if dep == "resource":
            self._inputs = [list(t.input_types or ()) for t in graph.nodes]

    # ------------------------------------------------------------------------------------------- public

    def entry(self, index: int) -> SampledSubgraph:
        """Plan entry ``index`` (0-based)."""
        rng = random.Random(f"taskbench-plan:{self.seed}:{index}")
        mode = rng.choices(self._modes, cum_weights=self._mode_cum)[0]
        n = len(self._names)
        if mode == "single":
            size = 1
        else:
            size = rng.choices(self._sizes, cum_weights=self._size_cum)[0]
            if mode == "dag":
                size = max(size, MIN_DAG_SIZE)
        size = min(size, n)
        grow = self._chain if mode == "chain" else self._dag
        best: tuple[list[int], list[tuple[int, int]]] | None = None
        first = rng.randrange(n)
        if size == 1:
            best = ([first], [])
        else:
            best = grow(rng, first, size)
            if len(best[0]) < size:
                # dead end: retry from the other tools, in an order drawn from this entry's RNG
                for start in rng.sample(range(n), n):
                    if start == first:
                        continue
                    nodes, edges = grow(rng, start, size)
                    if len(nodes) > len(best[0]):
                        best = (nodes, edges)
                    if len(nodes) == size:
                        break
        assert best is not None
        nodes, edges = best
        names = self._names
        return SampledSubgraph(
            index=index,
            seed=self.seed,
            mode=mode,  # type: ignore[arg-type]
            size=len(nodes),
            nodes=[names[i] for i in _topological(nodes, edges)],
            links=[self._link[(a, b)] for a, b in edges],  # the graph's links, with their reasons
        )

    def iter(self, start: int = 0, stop: int | None = None) -> Iterator[SampledSubgraph]:
        """Entries ``start, start+1, ...`` up to ``stop`` (exclusive; forever when None)."""
        i = start
        while stop is None or i < stop:
            yield self.entry(i)
            i += 1

    # ------------------------------------------------------------------------------------------- growth

    def _chain(self, rng: random.Random, start: int, size: int) -> tuple[list[int], list[tuple[int, int]]]:
        path = [start]
        chosen = {start}
        while len(path) < size:
            head, tail = path[0], path[-1]
            cands = [(p, True) for p in self._pred[head] if p not in chosen]
            cands += [(q, False) for q in self._succ[tail] if q not in chosen]
            if not cands:
                break
            node, at_head = cands[rng.randrange(len(cands))]
            chosen.add(node)
            if at_head:
                path.insert(0, node)
            else:
                path.append(node)
        return path, list(zip(path, path[1:], strict=False))

    def _dag(self, rng: random.Random, start: int, size: int) -> tuple[list[int], list[tuple[int, int]]]:
        nodes = [start]
        chosen = {start}
        edges: list[tuple[int, int]] = []
        inputs = self._inputs
        free: dict[int, list[str]] = {}  # resource graphs: input types not yet used by an incoming link
        if inputs is not None:
            free[start] = list(inputs[start])
        live = [start]
        while len(nodes) < size and live:
            k = rng.randrange(len(live))
            u = live[k]
            if inputs is None:
                preds = [p for p in self._pred[u] if p not in chosen]
            else:
                left = free[u]
                preds = [p for p in self._pred[u] if p not in chosen and self._type[(p, u)] in left]
            succs = [q for q in self._succ[u] if q not in chosen]
            if not preds and not succs:
                # candidates only shrink as the subgraph grows, so u is done for good
                live[k] = live[-1]
                live.pop()
                continue
            j = rng.randrange(len(preds) + len(succs))
            if j < len(preds):
                new, edge = preds[j], (preds[j], u)
            else:
                new = succs[j - len(preds)]
                edge = (u, new)
            if inputs is not None:
                free[new] = list(inputs[new])
                free[edge[1]].remove(self._type[edge])  # type: ignore[arg-type]
            chosen.add(new)
            nodes.append(new)
            edges.append(edge)
            live.append(new)
        return nodes, edges


def _topological(nodes: list[int], edges: list[tuple[int, int]]) -> list[int]:
    """Kahn's algorithm; ties broken by the order the nodes were chosen (deterministic)."""
    if not edges:
        return list(nodes)
    rank = {n: i for i, n in enumerate(nodes)}
    indeg = dict.fromkeys(nodes, 0)
    out: dict[int, list[int]] = {n: [] for n in nodes}
    for a, b in edges:
        indeg[b] += 1
        out[a].append(b)
    ready = sorted((n for n in nodes if indeg[n] == 0), key=rank.__getitem__)
    order: list[int] = []
    while ready:
        n = ready.pop(0)
        order.append(n)
        for m in out[n]:
            indeg[m] -= 1
            if indeg[m] == 0:
                ready.append(m)
        ready.sort(key=rank.__getitem__)
    return order


def iter_plan(
    graph: ToolGraph,
    seed: int,
    n: int | None = None,
    *,
    start: int = 0,
    mode_weights: Mapping[str, float] | None = None,
    size_weights: Mapping[int, float] | None = None,
) -> Iterator[SampledSubgraph]:
    """Plan entries ``start .. n-1`` (forever when ``n`` is None), one at a time."""
    sampler = SubgraphSampler(graph, seed, mode_weights=mode_weights, size_weights=size_weights)
    return sampler.iter(start, n)


MAX_PLAN = 1_000_000
"""Entries one materialized plan (:func:`sample_plan`, what ``generate`` runs) may hold: it is built whole before
the first model call, so ``--n 100000000000`` would hang and then exhaust memory. :func:`iter_plan` is lazy and
unbounded."""


def check_plan_size(n: int) -> None:
    """ConfigError unless ``0 <= n <= MAX_PLAN``."""
    if n < 0:
        raise ConfigError(f"n must be >= 0, got {n}")
    if n > MAX_PLAN:
        raise ConfigError(f"--n {n:,}: one run plans at most {MAX_PLAN:,} samples (the plan is built before the "
                          "first call); split the work over several output directories with different --seed")


def sample_plan(
    graph: ToolGraph,
    n: int,
    seed: int,
    *,
    mode_weights: Mapping[str, float] | None = None,
    size_weights: Mapping[int, float] | None = None,
) -> list[SampledSubgraph]:
    """A plan of ``n`` subgraphs: a pure function of (graph, n, seed, weights); ``plan(n)[:k] == plan(k)``."""
    check_plan_size(n)
    return list(iter_plan(graph, seed, n, mode_weights=mode_weights, size_weights=size_weights))
