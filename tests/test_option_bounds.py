"""Options are refused where they are read, not deeper; counts are bounded (issue 43, point 14).

Each case used to be accepted and then fail deeper (a pydantic traceback, a numpy ValueError, a jinja2
UndefinedError, a UnicodeDecodeError), hang, or run out of memory; now each is one ``taskbench: error:`` line
with exit 2, before anything is written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_runner import run as cli
from taskbench import bundled

GRAPH = str(bundled.path("multimedia") / "graph_desc.json")
RUN = ["run", "-m", "mock/echo", "-d", "multimedia", "--limit", "1", "--generate", "0", "--agents", "",
       "--bootstrap", "0", "-q"]


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "urls.txt").write_bytes(b"http://127.0.0.1:9/v1\n\xff\xfe not text\n")
    (tmp_path / "undefined.j2").write_text("{{ tools }} {{ x.y.z() }}")
    (tmp_path / "by-data.j2").write_text("{{ user_request }} {% for d in demos %}{{ d.result | int / 0 }}{% endfor %}")


def _written(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file() and "cache" not in p.parts
                  and p.suffix not in (".txt", ".j2"))


CASES = {
    "top-p 0": (["predict", "-d", "multimedia", "-m", "mock/echo", "-q", "-o", "p.jsonl", "--top-p", "0"], "--top-p"),
    "run max-tokens -1": ([*RUN, "-o", "r", "--max-tokens", "-1"], "--max-tokens"),
    "seed -1": ([*RUN, "-o", "r", "-s", "-1"], "--seed"),
    "evaluate seed -1": (["evaluate", "-d", "multimedia", "-p", "p.jsonl", "-s", "-1"], "--seed"),
    "seed past 32 bits": (["predict", "-d", "multimedia", "-m", "mock/echo", "-q", "-o", "p.jsonl", "-s",
                           str(2**40)], "--seed"),
    "non-UTF-8 base-url file": (["predict", "-d", "multimedia", "-m", "openai-compatible/x", "--base-url",
                                 "@urls.txt", "-q", "-o", "p.jsonl"], "not UTF-8"),
    "template undefined": (["predict", "-d", "multimedia", "-m", "mock/echo", "--limit", "1", "-q", "-o", "p.jsonl",
                            "--template", "undefined.j2"], "fails while rendering"),
    "template failing on data": (["predict", "-d", "multimedia", "-m", "mock/echo", "--limit", "2", "--shots", "1",
                                  "-q", "-o", "p.jsonl", "--template", "by-data.j2"], "fails while rendering"),
    "weights 1e308": (["generate", "--graph", GRAPH, "-m", "mock/echo", "--n", "2", "-q", "-o", "g",
                       "--mode-weights", "1e308,1e308,1e308"], "weights"),
    "sample weights 1e308": (["sample", GRAPH, "-n", "2", "--mode-weights", "1e308,1e308,1e308"], "weights"),
    "evaluate bootstrap 1e9": (["evaluate", "-d", "multimedia", "-p", "p.jsonl", "--bootstrap", "1000000000"],
                               "--bootstrap"),
    "run bootstrap 1e9": (["run", "-m", "mock/echo", "-d", "multimedia", "--limit", "1", "--generate", "0",
                           "--agents", "", "--bootstrap", "1000000000", "-q", "-o", "r"], "--bootstrap"),
    "compare permutations 1e9": (["compare", "-d", "multimedia", "p.jsonl", "p.jsonl", "--permutations",
                                  "1000000000"], "--permutations"),
    "agents compare bootstrap 1e9": (["agents", "compare", "a", "b", "--bootstrap", "1000000000"], "--bootstrap"),
    "agents eval -c 2^31": (["agents", "eval", "--env", "taskbench-multimedia", "--agent", "react", "-m",
                             "mock/echo", "-c", str(2**31), "-o", "a"], "--concurrency"),
    "predict -c 2^31": (["predict", "-d", "multimedia", "-m", "mock/echo", "-c", str(2**31), "-o", "p.jsonl"],
                        "--concurrency"),
    "sample --n 1e11 to a file": (["sample", GRAPH, "-n", "100000000000", "-o", "s.jsonl"], "--n"),
    "agents eval --repeats 2^31": (["agents", "eval", "--env", "taskbench-multimedia", "--agent", "react", "-m",
                                    "mock/echo", "--repeats", str(2**31), "-o", "a"], "--repeats"),
    "agents eval --alpha 2^31": (["agents", "eval", "--env", "taskbench-multimedia", "--agent", "react", "-m",
                                  "mock/echo", "--alpha", str(2**31), "-o", "a"], "--alpha"),
    "serve --port 99999": (["serve", "--model", "mock/echo", "--port", "99999"], "--port"),
    "view --port 99999": (["view", ".", "--port", "99999"], "--port"),
    "timeout 1e308": (["predict", "-d", "multimedia", "-m", "mock/echo", "-q", "-o", "p.jsonl", "--timeout", "1e308"],
                      "--timeout"),
    "max-retries 2^63": (["predict", "-d", "multimedia", "-m", "mock/echo", "-q", "-o", "p.jsonl", "--max-retries",
                          str(2**63)], "--max-retries"),
    "-O timeout text": (["predict", "-d", "multimedia", "-m", "mock/echo", "-q", "-o", "p.jsonl", "-O", "timeout=x"],
                        "timeout='x'"),
    "-O max_total_seconds inf": (["predict", "-d", "multimedia", "-m", "mock/echo", "-q", "-o", "p.jsonl", "-O",
                                  "max_total_seconds=1e400"], "max_total_seconds"),
    "-O max_retries 1000": (["predict", "-d", "multimedia", "-m", "mock/echo", "-q", "-o", "p.jsonl", "-O",
                             "max_retries=1000"], "max_retries"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_option_is_one_line_before_anything_is_written(case, tmp_path, capsys):
    argv, says = CASES[case]
    code, _, err = cli(capsys, *argv)
    assert code == 2, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("taskbench: error: ") and says in last, err
    assert _written(tmp_path) == []


def test_the_cli_bounds_are_the_librarys():
    from taskbench.cli.options import MAX_CONCURRENCY, MAX_REPLICATES
    from taskbench.eval.stats import MAX_REPLICATES as STATS_REPLICATES
    from taskbench.llm.model import MAX_CONCURRENCY as MODEL_CONCURRENCY

    assert (MAX_CONCURRENCY, MAX_REPLICATES) == (MODEL_CONCURRENCY, STATS_REPLICATES)


def test_the_library_refuses_the_same_counts():
    from taskbench.errors import ConfigError
    from taskbench.eval.stats import bootstrap_ci, paired_compare, rng_for

    cols = {"n": [1.0, 1.0]}
    with pytest.raises(ConfigError, match="--bootstrap"):
        bootstrap_ci(cols, lambda s: s, n_boot=10**9)
    with pytest.raises(ConfigError, match="--permutations"):
        paired_compare(cols, cols, lambda s: s, n_perm=10**9)
    with pytest.raises(ConfigError, match="seed"):
        rng_for(-1)
