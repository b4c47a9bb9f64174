"""RestBench as released: fetch its files from the public source, check them, cache them with their licence.

RestBench (the test set of RestGPT, Song et al. 2023; MIT licence) is four files in the GitHub repository
``Yifan-Song793/RestGPT``::

    datasets/tmdb.json       100 queries {query, solution: ["GET /path", ...]}
    datasets/spotify.json     57 queries
    specs/tmdb_oas.json      the TMDB OpenAPI spec (54 operations)
    specs/spotify_oas.json   the Spotify OpenAPI spec (40 operations)

:func:`fetch_restbench` downloads them (with the repository's ``LICENSE``) from GitHub's raw-file host at a
pinned commit, checks each one (the SHA-256 of the pinned release; at another ``revision``, its shape: a list
of ``{query, solution}`` records, an OpenAPI document with paths) and writes them into one flat directory,
``<cache>/restbench/`` by default, with ``SOURCE.json`` (where they came from, when, their hashes, the
licence). The environments find that directory (:func:`taskbench.envs.restbench.dataset.find_restbench_dir`)
after ``restbench_dir=`` / ``$TASKBENCH_RESTBENCH_DIR`` and a ``shared/reference/restbench`` beside the
checkout, which stay the offline ways in. A second call with the files in place reads nothing from the
network.

The base URL is ``$TASKBENCH_RESTBENCH_URL`` or ``source=`` when given (a mirror, or a loopback server in
tests): files are read from ``<base>/<revision>/<path>``, GitHub's raw layout.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError, did_you_mean
from .jsonio import atomic_writer, read_json, write_json

__all__ = [
    "APIS",
    "DEFAULT_SOURCE",
    "RESTGPT_COMMIT",
    "RESTGPT_REPO",
    "SOURCE_ENV",
    "SOURCE_FILE",
    "RestBenchFetch",
    "cached_restbench_dir",
    "default_restbench_cache",
    "fetch_restbench",
    "restbench_apis",
]

RESTGPT_REPO = "Yifan-Song793/RestGPT"
"""The GitHub repository that releases RestBench."""

RESTGPT_COMMIT = "d99012860cb45323975bf5780152d7aa44f390f5"
"""The pinned release: the repository's newest commit (2023-09-28, "Create LICENSE"); the hashes below are its
files'."""

DEFAULT_SOURCE = f"https://raw.githubusercontent.com/{RESTGPT_REPO}"
"""GitHub's raw-file host for the repository; files are read from ``<source>/<revision>/<path>``."""

SOURCE_ENV = "TASKBENCH_RESTBENCH_URL"
"""Environment variable naming another base URL (a mirror)."""

SOURCE_FILE = "SOURCE.json"
"""Written last into the cache directory: source URL, revision, hashes, time, licence."""

APIS = ("tmdb", "spotify")


@dataclass(frozen=True)
class _File:
    name: str  # the name in the flat directory the environments read
    remote: str  # the path in the repository
    sha256: str  # at RESTGPT_COMMIT
    kind: str  # queries | openapi | licence
    count: int  # queries or operations at RESTGPT_COMMIT (0: not counted)
    api: str | None = None


FILES: tuple[_File, ...] = (
    _File("tmdb.json", "datasets/tmdb.json",
          "6a9686067683ec6c33221de05bd2e763cfbfedf2cac6f4e6b607d7ab80a858d4", "queries", 100, "tmdb"),
    _File("tmdb_oas.json", "specs/tmdb_oas.json",
          "6e5a3c4ebdf2e3deeada3331ad65c7b802b0aeb58c6167704db700be49b00017", "openapi", 54, "tmdb"),
    _File("spotify.json", "datasets/spotify.json",
          "b6ba57cc6f29adf352c6a1ceeb4434d6fd508eedfe514afb2d79b6a282f8efc0", "queries", 57, "spotify"),
    _File("spotify_oas.json", "specs/spotify_oas.json",
          "7cfaf223ea373d8aa7429e6d62d9085b4678617556865cf23496ab2c4bf44c54", "openapi", 40, "spotify"),
    _File("LICENSE", "LICENSE",
          "c2ff1e27cc35cdea32bfee69d9dee9c36ade8e473fce34441b9d79b3e1ac0cae", "licence", 0),
)

_METHODS = ("get", "post", "put", "patch", "delete", "head", "options")


@dataclass
class RestBenchFetch:
    """What :func:`fetch_restbench` did: the directory, per API its queries and operations, whether the files
    are the pinned release's (``verified``), and whether anything was downloaded (``downloaded``)."""

    directory: Path
    revision: str
    source: str
    verified: bool
    downloaded: list[str]
    counts: dict[str, dict[str, int]]
    licence: str = "MIT"


def restbench_apis(api: str | Iterable[str] = "all") -> list[str]:
    """``"all"`` -> tmdb and spotify; otherwise the named API(s), validated."""
    wanted = [api] if isinstance(api, str) else list(api)
    if "all" in wanted:
        return list(APIS)
    for name in wanted:
        if name not in APIS:
            raise ConfigError(f"unknown RestBench API {name!r} ({did_you_mean(name, [*APIS, 'all'])})")
    return list(dict.fromkeys(wanted))


def default_restbench_cache() -> Path:
    """``<taskbench cache>/restbench`` (``$TASKBENCH_CACHE``, else ``$XDG_CACHE_HOME/taskbench``, else
    ``~/.cache/taskbench``)."""
    from ..llm.weights import cache_dir

    return cache_dir() / "restbench"


def cached_restbench_dir() -> Path | None:
    """The cache directory when a fetch completed there (its ``SOURCE.json`` exists), else None."""
    path = default_restbench_cache()
    return path if (path / SOURCE_FILE).is_file() else None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _count(item: _File, data: bytes, url: str) -> int:
    """Check the shape of a downloaded file; the number of queries or operations (0 for the licence)."""
    if item.kind == "licence":
        text = data.decode("utf-8", errors="replace")
        if "Permission is hereby granted" not in text:
            raise InputError("not RestGPT's licence text (expected the MIT licence)", path=url)
        return 0
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"not JSON ({str(exc).splitlines()[0][:80]})", path=url,
                         hint="the source is not serving RestBench's files; check --source") from None
    if item.kind == "queries":
        if not isinstance(doc, list) or not doc or not all(
                isinstance(r, dict) and isinstance(r.get("query"), str) and isinstance(r.get("solution"), list)
                for r in doc):
            raise InputError("not RestBench queries (expected a JSON list of {query, solution} records)", path=url)
        return len(doc)
    paths = doc.get("paths") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or "openapi" not in doc or not isinstance(paths, dict):
        raise InputError("not an OpenAPI document (expected 'openapi' and 'paths')", path=url)
    return sum(1 for ops in paths.values() if isinstance(ops, dict) for m in ops if m in _METHODS)


def _http_get(url: str, timeout: float) -> bytes:
    """GET ``url`` (redirects followed); HTTP and network failures are one-line ConfigErrors."""
    import httpx

    try:
        response = httpx.get(url, timeout=timeout, follow_redirects=True)
    except httpx.HTTPError as exc:
        raise ConfigError(f"cannot download {url} ({type(exc).__name__}: {str(exc) or 'no answer'}); check the "
                          f"network or the --source / ${SOURCE_ENV} mirror") from None
    if response.status_code != 200:
        raise ConfigError(f"cannot download {url} (HTTP {response.status_code}); check --revision and --source")
    return response.content


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def fetch_restbench(
    api: str | Iterable[str] = "all",
    *,
    cache_dir: str | Path | None = None,
    revision: str | None = None,
    source: str | None = None,
    force: bool = False,
    timeout: float = 60.0,
    get: Callable[[str, float], bytes] | None = None,
) -> RestBenchFetch:
    """Download RestBench's queries and OpenAPI specs (and the licence) into one directory, check and cache
    them; the directory works as ``restbench_dir`` / ``$TASKBENCH_RESTBENCH_DIR`` and is found by the
    RestBench environments when it is the default cache.

    ``revision``: a commit, tag or branch of the repository (default: the pinned release, whose SHA-256 hashes
    are checked; another revision is checked for shape only and marked unverified). ``source``: the base URL
    (default ``$TASKBENCH_RESTBENCH_URL``, else GitHub's raw host). Files already in place with the expected
    hashes are not downloaded again unless ``force``. ``get``: the HTTP GET (url, timeout) -> bytes (tests).
    """
    apis = restbench_apis(api)
    rev = revision or RESTGPT_COMMIT
    pinned = rev == RESTGPT_COMMIT
    base = (source or os.environ.get(SOURCE_ENV) or DEFAULT_SOURCE).rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise ConfigError(f"--source must be an http(s) URL, not {base!r}")
    out = Path(cache_dir).expanduser() if cache_dir is not None else default_restbench_cache()
    if out.exists() and not out.is_dir():
        raise InputError("not a directory", path=out, hint="choose another --cache-dir")
    fetch = get or _http_get
    wanted = [f for f in FILES if f.api is None or f.api in apis]
    previous = _read_source(out)
    downloaded: list[str] = []
    counts: dict[str, dict[str, int]] = {}
    hashes: dict[str, str] = dict(previous.get("sha256") or {}) if previous.get("revision") == rev else {}
    for item in wanted:
        target = out / item.name
        expected = item.sha256 if pinned else hashes.get(item.name)
        data: bytes | None = None
        if not force and expected and target.is_file():
            local = target.read_bytes()
            if _sha256(local) == expected:
                data = local
        url = f"{base}/{rev}/{item.remote}"
        if data is None:
            data = fetch(url, timeout)
            digest = _sha256(data)
            if pinned and digest != item.sha256:
                raise InputError(f"SHA-256 {digest[:16]}... is not the pinned release's ({item.sha256[:16]}...)",
                                 path=url, hint="the source serves other files; nothing was replaced")
            _count(item, data, url)  # the shape, before anything is written
            out.mkdir(parents=True, exist_ok=True)
            with atomic_writer(target) as fh:
                fh.write(data)
            downloaded.append(item.name)
        n = _count(item, data, str(target))
        hashes[item.name] = _sha256(data)
        if item.api is not None:
            counts.setdefault(item.api, {})["queries" if item.kind == "queries" else "operations"] = n
    same = previous.get("revision") == rev
    if not same:  # files of another revision that this call did not replace would mix two releases
        for item in FILES:
            if item not in wanted:
                (out / item.name).unlink(missing_ok=True)
                hashes.pop(item.name, None)
    if same:
        for name, figures in (previous.get("counts") or {}).items():
            if name not in counts and isinstance(figures, dict):
                counts[name] = figures
    write_json(out / SOURCE_FILE, {
        "dataset": "RestBench", "repository": f"https://github.com/{RESTGPT_REPO}", "source": base,
        "revision": rev, "verified": pinned, "apis": sorted(counts),
        "licence": "MIT (see LICENSE; Copyright (c) 2023 Yifan Song)",
        "fetched": _now() if downloaded or not same else previous.get("fetched"),
        "sha256": hashes, "counts": counts,
    })
    return RestBenchFetch(directory=out, revision=rev, source=base, verified=pinned, downloaded=downloaded,
                          counts=counts)


def _read_source(directory: Path) -> dict[str, Any]:
    """The ``SOURCE.json`` of an earlier fetch ({} when there is none or it cannot be read)."""
    path = directory / SOURCE_FILE
    if not path.is_file():
        return {}
    try:
        doc = read_json(path)
    except InputError:
        return {}
    return doc if isinstance(doc, dict) else {}
