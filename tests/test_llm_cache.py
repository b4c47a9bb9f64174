"""The SQLite (WAL) response cache: keys, round trips, and many writers in threads and processes."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import threading

from taskbench.llm import ResponseCache, cache_key

IDENT = {"provider": "p", "model": "m", "base_url": "http://h/v1"}
MSGS = [{"role": "user", "content": "q"}]
PARAMS = {"temperature": 0.0, "top_p": 1.0, "max_tokens": 10, "seed": None, "stop": []}


def test_key_depends_on_everything_that_changes_the_answer():
    base = cache_key(IDENT, MSGS, PARAMS, None)
    assert base == cache_key(dict(reversed(list(IDENT.items()))), MSGS, dict(PARAMS), None)  # order-free
    variants = [
        cache_key({**IDENT, "base_url": "http://other/v1"}, MSGS, PARAMS, None),
        cache_key({**IDENT, "model": "m2"}, MSGS, PARAMS, None),
        cache_key({**IDENT, "provider": "q"}, MSGS, PARAMS, None),
        cache_key(IDENT, [{"role": "user", "content": "q "}], PARAMS, None),
        cache_key(IDENT, MSGS, {**PARAMS, "temperature": 0.5}, None),
        cache_key(IDENT, MSGS, {**PARAMS, "seed": 1}, None),
        cache_key(IDENT, MSGS, PARAMS, {"type": "object"}),
    ]
    assert len({base, *variants}) == len(variants) + 1
    assert len(base) == 64 and int(base, 16) >= 0


def test_round_trip_and_wal(tmp_path):
    cache = ResponseCache(tmp_path / "sub" / "c.sqlite")
    assert cache.get("k") is None and len(cache) == 0
    value = {"text": "héllo", "prompt_tokens": 3, "completion_tokens": 1, "finish_reason": "stop", "extra": {}}
    cache.put("k", value, model="p/m")
    assert cache.get("k") == value and len(cache) == 1
    mode = cache._connect().execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    cache.clear()
    assert len(cache) == 0
    cache.close()


def _writer(path: str, worker: int, n: int) -> None:
    cache = ResponseCache(path)
    for i in range(n):
        cache.put(f"{worker}-{i}", {"text": f"w{worker} i{i} " + "x" * 200, "i": i})
        if i % 10 == 0:  # read others' rows while they write
            cache.get(f"{(worker + 1) % 4}-{i}")
    cache.close()


def test_concurrent_writers_in_processes_and_threads(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    ResponseCache(path).close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 150)) for w in range(4)]
    for p in procs:
        p.start()
    threads = [threading.Thread(target=_writer, args=(path, w, 150)) for w in range(4, 7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    cache = ResponseCache(path)
    assert len(cache) == 7 * 150
    assert cache.get("3-149")["text"].startswith("w3 i149 ")
    assert cache.get("6-0")["i"] == 0
    cache.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_shared_connection_across_threads(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    errors = []

    def work(w):
        try:
            for i in range(50):
                cache.put(f"t{w}-{i}", {"i": i})
                assert cache.get(f"t{w}-{i}") == {"i": i}
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(cache) == 400
    cache.close()
