"""`taskbench data fetch restbench`: RestBench as released, fetched from a loopback server that plays RestGPT's
GitHub raw host (serving the ../shared copies at the pinned commit), checked, cached with its licence, and found
by the environments. Nothing here reaches the internet: the base URL is the loopback server's, and the socket
guard in conftest refuses anything else."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cli_runner import run
from conftest import SHARED
from taskbench.dataset import restbench as rb
from taskbench.envs.restbench import dataset as rbdata
from taskbench.errors import ConfigError

SOURCE = SHARED / "reference" / "restbench"
LICENSE = Path(__file__).parent / "data" / "restgpt_LICENSE"
REMOTE = {"datasets/tmdb.json": "tmdb.json", "datasets/spotify.json": "spotify.json",
          "specs/tmdb_oas.json": "tmdb_oas.json", "specs/spotify_oas.json": "spotify_oas.json"}

pytestmark = pytest.mark.skipif(not (SOURCE / "tmdb_oas.json").is_file(),
                                reason=f"RestBench's files are not in {SOURCE} (../shared absent)")


class RawHost:
    """GitHub's raw layout on loopback: ``/<revision>/<path>``; ``files`` maps a path to its bytes, ``hits``
    counts the requests, ``broken`` paths answer with other bytes."""

    def __init__(self, revision: str = rb.RESTGPT_COMMIT) -> None:
        self.files = {f"/{revision}/{remote}": (SOURCE / local).read_bytes() for remote, local in REMOTE.items()}
        self.files[f"/{revision}/LICENSE"] = LICENSE.read_bytes()
        self.hits: list[str] = []
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                host.hits.append(self.path)
                body = host.files.get(self.path)
                if body is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> RawHost:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[RawHost]:
    monkeypatch.delenv(rb.SOURCE_ENV, raising=False)
    monkeypatch.delenv(rbdata.ENV_VAR, raising=False)
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "cache"))
    with RawHost() as server:
        yield server


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_fetch_downloads_checks_and_caches_restbench_with_its_licence(host: RawHost, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "data", "fetch", "restbench", "--source", host.url)
    assert code == 0, err
    cache = tmp_path / "cache" / "restbench"
    assert out.splitlines() == [f"tmdb\t{cache}", f"spotify\t{cache}"]
    assert "SHA-256 of the pinned release checked" in err and "tmdb: 100 queries, 54 operations" in err
    assert "spotify: 57 queries, 40 operations" in err and "MIT licence" in err
    for local in REMOTE.values():
        assert (cache / local).read_bytes() == (SOURCE / local).read_bytes()
    assert "Permission is hereby granted" in (cache / "LICENSE").read_text()
    source = json.loads((cache / rb.SOURCE_FILE).read_text())
    assert source["revision"] == rb.RESTGPT_COMMIT and source["verified"] is True and source["source"] == host.url
    assert source["counts"]["tmdb"] == {"queries": 100, "operations": 54}
    assert source["sha256"]["tmdb_oas.json"] == _sha(SOURCE / "tmdb_oas.json")
    assert source["licence"].startswith("MIT")
    assert len(host.hits) == 5 and all(h.startswith(f"/{rb.RESTGPT_COMMIT}/") for h in host.hits)
    # a second fetch finds everything in place: nothing is downloaded
    code, out, err = run(capsys, "data", "fetch", "restbench", "--source", host.url)
    assert code == 0 and "already cached" in err and len(host.hits) == 5
    # --force downloads again
    code, _, err = run(capsys, "data", "fetch", "restbench", "--source", host.url, "--force", "--domain", "tmdb")
    assert code == 0 and len(host.hits) == 8


def test_the_environment_finds_the_fetched_files(host: RawHost, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rbdata, "shared_candidates", lambda: [])  # as on a machine without ../shared
    assert rbdata.find_restbench_dir() is None
    rb.fetch_restbench("tmdb", source=host.url)
    found = rbdata.find_restbench_dir()
    assert found == tmp_path / "cache" / "restbench"
    from taskbench.envs.restbench.env import RestBenchEnv

    env = RestBenchEnv("tmdb")  # task_set auto: RestBench's queries now that they are found
    assert env.task_set == "restbench" and env.spec_file == found / "tmdb_oas.json" and len(env.tools()) == 54
    assert len(env.tasks()) == 100
    # the offline ways in come first: the variable wins over the cache
    other = tmp_path / "offline"
    other.mkdir()
    (other / "tmdb.json").write_bytes((SOURCE / "tmdb.json").read_bytes())
    monkeypatch.setenv(rbdata.ENV_VAR, str(other))
    assert rbdata.find_restbench_dir() == other


def test_without_the_files_the_error_names_the_fetch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(rbdata, "shared_candidates", lambda: [])
    monkeypatch.delenv(rbdata.ENV_VAR, raising=False)
    monkeypatch.setenv("TASKBENCH_CACHE", str(tmp_path / "empty"))
    from taskbench.envs.restbench.env import RestBenchEnv

    with pytest.raises(ConfigError, match="taskbench data fetch restbench"):
        RestBenchEnv("tmdb", task_set="restbench")


def test_a_source_serving_other_files_replaces_nothing(host: RawHost, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "data", "fetch", "restbench", "--source", host.url, "--domain", "tmdb")[0] == 0
    cache = tmp_path / "cache" / "restbench"
    before = (cache / "tmdb.json").read_bytes()
    host.files[f"/{rb.RESTGPT_COMMIT}/datasets/tmdb.json"] = b'[{"query": "q", "solution": []}]'
    code, out, err = run(capsys, "data", "fetch", "restbench", "--source", host.url, "--domain", "tmdb", "--force")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "is not the pinned release's" in err and "nothing was replaced" in err
    assert (cache / "tmdb.json").read_bytes() == before


def test_missing_files_and_bad_names_are_one_line(host: RawHost, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "data", "fetch", "restbench", "--source", host.url, "--revision", "v9")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "HTTP 404" in err and "--revision" in err
    code, _, err = run(capsys, "data", "fetch", "restbench", "--domain", "imdb", "--source", host.url)
    assert code == 2 and "unknown RestBench API 'imdb'" in err
    code, _, err = run(capsys, "data", "fetch", "restbnch")
    assert code == 2 and "did you mean 'restbench'" in err
    code, _, err = run(capsys, "data", "fetch", "restbench", "--source", "ftp://example.org")
    assert code == 2 and "http(s) URL" in err
    # nothing listens: one line, no traceback (a loopback port with no server)
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    code, _, err = run(capsys, "data", "fetch", "restbench", "--source", dead)
    assert code == 2 and "cannot download" in err and "Traceback" not in err


def test_another_revision_is_checked_for_shape_and_marked_unverified(host: RawHost, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    for path in list(host.files):
        host.files[path.replace(rb.RESTGPT_COMMIT, "main")] = host.files[path]
    host.files["/main/datasets/spotify.json"] = b'{"not": "a list"}'
    code, _, err = run(capsys, "data", "fetch", "restbench", "--source", host.url, "--revision", "main",
                       "--domain", "tmdb")
    assert code == 0 and "not the pinned release (unverified)" in err
    source = json.loads((tmp_path / "cache" / "restbench" / rb.SOURCE_FILE).read_text())
    assert source["verified"] is False and source["revision"] == "main"
    code, _, err = run(capsys, "data", "fetch", "restbench", "--source", host.url, "--revision", "main",
                       "--domain", "spotify")
    assert code == 2 and "not RestBench queries" in err


def test_the_source_comes_from_the_environment_and_defaults_to_github(monkeypatch: pytest.MonkeyPatch,
                                                                       host: RawHost, tmp_path: Path) -> None:
    seen: list[str] = []

    def fake_get(url: str, timeout: float) -> bytes:
        seen.append(url)
        raise ConfigError("stop here")

    with pytest.raises(ConfigError):
        rb.fetch_restbench(get=fake_get, cache_dir=tmp_path / "x")
    assert seen == [f"https://raw.githubusercontent.com/Yifan-Song793/RestGPT/{rb.RESTGPT_COMMIT}/datasets/tmdb.json"]
    monkeypatch.setenv(rb.SOURCE_ENV, host.url)
    result = rb.fetch_restbench("spotify", cache_dir=tmp_path / "y")
    assert result.source == host.url and result.counts == {"spotify": {"queries": 57, "operations": 40}}
