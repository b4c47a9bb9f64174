"""The hub copy of TaskBench: its layout and field names load; fetch works against a loopback fake hub."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from taskbench import bundled
from taskbench.dataset import load_dataset, read_samples
from taskbench.dataset.hub import (
    DOMAINS,
    HUB_REPO,
    domain_dir,
    fetch_taskbench,
    hub_patterns,
    read_parquet_records,
    resolve_domains,
)
from taskbench.errors import ConfigError, InputError, MissingDependencyError

ROOT = Path(__file__).resolve().parents[1]
RENAME = {"task_steps": "tool_steps", "task_nodes": "tool_nodes", "task_links": "tool_links"}


def hub_record(record: dict) -> dict:
    """A record as the hub's data.json spells it (tool_* instead of task_*)."""
    return {RENAME.get(k, k): v for k, v in record.items()}


def write_hub_domain(src: Path, dest: Path, *, data: str = "json") -> Path:
    """Lay out one domain folder like the hub does (data.json with tool_* names, user_requests.jsonl)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("tool_desc.json", "graph_desc.json"):
        (dest / name).write_bytes((src / name).read_bytes())
    data_file = src / "data.json" if (src / "data.json").is_file() else src / "gold_sample.jsonl"
    records = [json.loads(line) for line in data_file.read_text().splitlines() if line.strip()]
    hub = [hub_record(r) for r in records]
    if data == "json":
        (dest / "data.json").write_text("".join(json.dumps(r) + "\n" for r in hub))
    else:
        write_parquet(dest / "improved.parquet", hub, as_strings=(data == "parquet-strings"))
    (dest / "user_requests.jsonl").write_text(
        "".join(json.dumps({"id": r["id"], "user_request": r.get("user_request", r.get("instruction"))}) + "\n"
                for r in records)
    )
    return dest


def write_parquet(path: Path, rows: list[dict], *, as_strings: bool) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    cols = sorted({k for r in rows for k in r})
    table = {}
    for col in cols:
        values = [r.get(col) for r in rows]
        if as_strings or any(isinstance(v, list) for v in values):
            # nested columns as JSON text (mixed argument shapes do not fit one arrow type)
            values = [v if isinstance(v, str) or v is None else json.dumps(v) for v in values]
        table[col] = values
    pq.write_table(pa.table(table), str(path))


def comparable(ds):
    return [s.to_record() for s in ds.samples]


def test_domains_and_patterns():
    assert resolve_domains("all") == list(DOMAINS)
    assert resolve_domains("multimedia") == ["multimedia"]
    assert hub_patterns(["huggingface"]) == ["data_huggingface/*"]
    with pytest.raises(ConfigError, match="unknown TaskBench domain 'tmdb'"):
        resolve_domains("tmdb")


def test_domain_dir(tmp_path):
    (tmp_path / "data_multimedia").mkdir()
    (tmp_path / "dailylifeapis").mkdir()
    assert domain_dir(tmp_path, "multimedia") == tmp_path / "data_multimedia"
    assert domain_dir(tmp_path, "dailylifeapis") == tmp_path / "dailylifeapis"
    with pytest.raises(InputError, match="no folder for domain 'huggingface'"):
        domain_dir(tmp_path, "huggingface")


@pytest.mark.parametrize("name", bundled.names())
def test_hub_layout_of_our_files_loads_the_same(tmp_path, name):
    src = bundled.path(name)
    dest = write_hub_domain(src, tmp_path / f"data_{name}")
    assert not (dest / "user_requests.json").exists()
    hub = load_dataset(dest)
    ours = load_dataset(src)
    assert comparable(hub) == comparable(ours)
    assert hub.requests == ours.requests and len(hub.requests) == len(ours.samples)


@pytest.mark.parametrize("as_strings", [False, True], ids=["nested-json-columns", "all-strings"])
def test_parquet_only_domain_loads_the_same(tmp_path, as_strings):
    pytest.importorskip("pyarrow")
    src = bundled.path("dailylifeapis")
    dest = write_hub_domain(src, tmp_path / "data_dailylifeapis",
                            data="parquet-strings" if as_strings else "parquet")
    ds = load_dataset(dest)
    assert ds.data_path is not None and ds.data_path.name == "improved.parquet"
    assert comparable(ds) == comparable(load_dataset(src))


@pytest.mark.parametrize("domain", DOMAINS)
def test_released_gold_in_hub_shape_loads_the_same(reference_dir, tmp_path, domain):
    pytest.importorskip("pyarrow")
    src = reference_dir / domain
    direct = load_dataset(src)
    as_json = load_dataset(write_hub_domain(src, tmp_path / "json" / f"data_{domain}"))
    as_parquet = load_dataset(write_hub_domain(src, tmp_path / "pq" / f"data_{domain}", data="parquet"))
    assert comparable(as_json) == comparable(direct) == comparable(as_parquet)
    assert all(s.task_nodes for s in as_json.samples)


def test_parquet_without_pyarrow_is_a_clear_error(tmp_path, monkeypatch):
    path = tmp_path / "data.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(MissingDependencyError, match=r'pip install "taskbench\[hub\]"'):
        read_parquet_records(path)


def test_broken_parquet_names_the_file(tmp_path):
    pytest.importorskip("pyarrow")
    path = tmp_path / "data.parquet"
    path.write_bytes(b"not parquet at all")
    with pytest.raises(InputError, match="data.parquet: cannot read parquet"):
        read_samples(path)


def test_fetch_without_huggingface_hub(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(MissingDependencyError, match=r'pip install "taskbench\[hub\]"'):
        fetch_taskbench("multimedia")


class FakeHub:
    """A loopback HTTP server speaking the few hub endpoints snapshot_download uses.

    GET /api/datasets/<repo>/revision/<rev>   repo info (sha, siblings)
    GET /api/datasets/<repo>/tree/<sha>       recursive file listing
    HEAD|GET /datasets/<repo>/resolve/<sha>/<path>   file metadata and content
    """

    SHA = "0123456789abcdef0123456789abcdef01234567"

    def __init__(self, files: dict[str, bytes], repo: str = HUB_REPO) -> None:
        self.files = files
        self.repo = repo
        self.requests: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, code: int, body: bytes = b"", headers: dict | None = None, head: bool = False):
                self.send_response(code)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def _route(self, head: bool) -> None:
                path = unquote(urlparse(self.path).path)
                hub.requests.append(f"{self.command} {path}")
                api = f"/api/datasets/{hub.repo}/"
                if path.startswith(api + "revision/"):
                    rev = path[len(api + "revision/"):]
                    if rev not in ("main", hub.SHA):
                        self._send(404, b'{"error": "Invalid rev id"}',
                                   {"X-Error-Code": "RevisionNotFound", "Content-Type": "application/json"})
                        return
                    info = {"id": hub.repo, "sha": hub.SHA, "private": False,
                            "siblings": [{"rfilename": p} for p in hub.files]}
                    self._send(200, json.dumps(info).encode(), {"Content-Type": "application/json"}, head)
                elif path.startswith(api + "tree/"):
                    listing = [{"type": "file", "path": p, "size": len(b), "oid": hashlib.sha1(b).hexdigest()}
                               for p, b in hub.files.items()]
                    self._send(200, json.dumps(listing).encode(), {"Content-Type": "application/json"}, head)
                elif path.startswith(f"/datasets/{hub.repo}/resolve/"):
                    rest = path[len(f"/datasets/{hub.repo}/resolve/"):]
                    _rev, _, name = rest.partition("/")
                    if name not in hub.files:
                        self._send(404, b"", {"X-Error-Code": "EntryNotFound"}, head)
                        return
                    body = hub.files[name]
                    self._send(200, body, {"X-Repo-Commit": hub.SHA,
                                           "ETag": f'"{hashlib.sha1(body).hexdigest()}"'}, head)
                else:
                    self._send(404, b"", {}, head)

            def do_GET(self):  # noqa: N802
                self._route(head=False)

            def do_HEAD(self):  # noqa: N802
                self._route(head=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeHub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture(scope="module")
def hub_files(tmp_path_factory) -> dict[str, bytes]:
    """A miniature hub repository: our bundled data in the hub layout plus files fetch must skip."""
    root = tmp_path_factory.mktemp("hubrepo")
    files: dict[str, bytes] = {"README.md": b"# not downloaded\n", "evaluate.py": b"print('not downloaded')\n"}
    for name in bundled.names():
        folder = write_hub_domain(bundled.path(name), root / f"data_{name}")
        for f in sorted(folder.iterdir()):
            files[f"data_{name}/{f.name}"] = f.read_bytes()
    return files


@pytest.fixture()
def online(monkeypatch):
    """Let huggingface_hub make requests (conftest sets HF_HUB_OFFLINE=1 so nothing reaches a real hub)."""
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")


@pytest.mark.slow
def test_fetch_from_a_loopback_hub(tmp_path, hub_files, online):
    pytest.importorskip("huggingface_hub")
    with FakeHub(hub_files) as hub:
        dirs = fetch_taskbench("multimedia", cache_dir=tmp_path / "cache", endpoint=hub.url)
        assert list(dirs) == ["multimedia"]
        folder = dirs["multimedia"]
        assert folder.name == "data_multimedia" and str(folder).startswith(str(tmp_path / "cache"))
        assert sorted(p.name for p in folder.iterdir()) == [
            "data.json", "graph_desc.json", "tool_desc.json", "user_requests.jsonl"]
        assert not (folder.parent / "README.md").exists()
        assert comparable(load_dataset(folder)) == comparable(load_dataset(bundled.path("multimedia")))
        downloads = [r for r in hub.requests if r.startswith("GET /datasets/")]
        assert len(downloads) == 4 and all("/data_multimedia/" in r for r in downloads)

        with pytest.raises(ConfigError, match="revision 'v9' not found"):
            fetch_taskbench("multimedia", cache_dir=tmp_path / "cache", endpoint=hub.url, revision="v9")


@pytest.mark.slow
def test_cli_fetch_prints_local_folders(tmp_path, hub_files):
    pytest.importorskip("huggingface_hub")
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    with FakeHub(hub_files) as hub:
        env.update(HF_ENDPOINT=hub.url, HF_HUB_DISABLE_TELEMETRY="1")
        cmd = [sys.executable, "-m", "taskbench", "data", "fetch", "taskbench", "--cache-dir", str(tmp_path)]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        lines = [line.split("\t") for line in done.stdout.splitlines()]
        assert [name for name, _ in lines] == list(DOMAINS)
        for name, folder in lines:
            assert Path(folder).name == f"data_{name}"
            assert len(load_dataset(folder).samples) == len(load_dataset(bundled.path(name)).samples)
        bad = subprocess.run(cmd + ["--revision", "nope"], env=env, capture_output=True, text=True,
                             timeout=120, cwd=ROOT)
        assert bad.returncode == 2
        assert bad.stderr.strip().splitlines() == ["taskbench: error: revision 'nope' not found in the hub "
                                                   f"dataset {HUB_REPO}"]
