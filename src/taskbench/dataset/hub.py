"""The released TaskBench on the Hugging Face hub: download it, find its domain folders, read its parquet files.

The hub copy (dataset repo ``microsoft/Taskbench``) keeps one folder per domain::

    data_huggingface/  data_multimedia/  data_dailylifeapis/
        tool_desc.json  graph_desc.json  alignment_ids.json
        data.json            gold samples, JSON Lines; the task graph under tool_steps/tool_nodes/tool_links
        user_requests.jsonl  {id, user_request} per line
        data.parquet         the samples as a parquet table
        improved.parquet     the quality-enhanced samples as a parquet table

:func:`taskbench.dataset.load_dataset` reads such a folder directly (the ``tool_*`` field names are aliases,
see ``taskbench.schema.sample.FIELD_ALIASES``; parquet needs ``pyarrow``). :func:`fetch_taskbench` downloads
the folders with ``huggingface_hub`` (the optional extra ``hub``) into its cache and returns where they are.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

from ..errors import ConfigError, InputError, MissingDependencyError, did_you_mean

__all__ = [
    "DOMAINS",
    "HUB_REPO",
    "domain_dir",
    "fetch_taskbench",
    "hub_patterns",
    "read_parquet_records",
    "resolve_domains",
]

HUB_REPO = "microsoft/Taskbench"
"""The dataset repository of the released TaskBench on the Hugging Face hub."""

DOMAINS: tuple[str, ...] = ("huggingface", "multimedia", "dailylifeapis")
"""The three TaskBench domains."""

_JSON_COLUMNS = ("task_steps", "task_nodes", "task_links", "tool_steps", "tool_nodes", "tool_links",
                 "sampled_nodes", "sampled_links")


def resolve_domains(domain: str | Iterable[str] = "all") -> list[str]:
    """``"all"`` -> every domain; otherwise the named domain(s), validated."""
    wanted = [domain] if isinstance(domain, str) else list(domain)
    if "all" in wanted:
        return list(DOMAINS)
    for name in wanted:
        if name not in DOMAINS:
            raise ConfigError(f"unknown TaskBench domain {name!r} ({did_you_mean(name, [*DOMAINS, 'all'])})")
    return list(dict.fromkeys(wanted))


def hub_patterns(domains: Iterable[str]) -> list[str]:
    """``allow_patterns`` that select the domains' folders (and nothing else) in the hub repository."""
    return [f"data_{d}/*" for d in domains]


def domain_dir(root: str | Path, domain: str) -> Path:
    """The folder of ``domain`` inside a TaskBench checkout or hub snapshot (``data_<domain>`` or ``<domain>``)."""
    root = Path(root)
    for candidate in (root / f"data_{domain}", root / domain):
        if candidate.is_dir():
            return candidate
    raise InputError(f"no folder for domain {domain!r}", path=root, hint=f"expected data_{domain}/ or {domain}/")


def fetch_taskbench(
    domain: str | Iterable[str] = "all",
    *,
    cache_dir: str | Path | None = None,
    revision: str | None = None,
    repo_id: str = HUB_REPO,
    endpoint: str | None = None,
) -> dict[str, Path]:
    """Download the released TaskBench from the Hugging Face hub; ``{domain: local folder}``.

    Files land in the ``huggingface_hub`` cache (``cache_dir`` overrides it); a second call reuses them.
    ``endpoint`` defaults to ``$HF_ENDPOINT`` (or the public hub). Needs the optional extra ``hub``.
    """
    domains = resolve_domains(domain)
    try:
        import huggingface_hub
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, RevisionNotFoundError
    except ImportError:  # pragma: no cover - exercised through a monkeypatched import in the tests
        raise MissingDependencyError(
            "huggingface_hub", "hub", "downloading TaskBench from the Hugging Face hub"
        ) from None
    try:
        root = huggingface_hub.snapshot_download(
            repo_id,
            repo_type="dataset",
            revision=revision,
            cache_dir=str(cache_dir) if cache_dir is not None else None,
            allow_patterns=hub_patterns(domains),
            endpoint=endpoint or os.environ.get("HF_ENDPOINT") or None,
        )
    except RevisionNotFoundError:
        raise ConfigError(f"revision {revision!r} not found in the hub dataset {repo_id}") from None
    except LocalEntryNotFoundError:
        raise ConfigError(
            f"cannot reach the Hugging Face hub to download {repo_id} and nothing is cached"
            " (check the network, HF_ENDPOINT, HF_HUB_OFFLINE)"
        ) from None
    except HfHubHTTPError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"download of {repo_id} failed: {first}") from None
    except OSError as exc:
        raise ConfigError(f"download of {repo_id} failed: {exc}") from None
    out: dict[str, Path] = {}
    for name in domains:
        try:
            out[name] = domain_dir(root, name)
        except InputError:
            raise ConfigError(
                f"the hub dataset {repo_id} (revision {revision or 'main'}) has no data_{name}/ folder"
            ) from None
    return out


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in "[{":
            try:
                return json.loads(text)
            except ValueError:
                return value
    return value


def read_parquet_records(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a parquet file as plain dicts (nested columns as lists/dicts; JSON-string columns decoded).

    Needs ``pyarrow`` (the optional extra ``hub``).
    """
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingDependencyError("pyarrow", "hub", f"reading {Path(path).name}") from None
    try:
        table = pq.read_table(str(path))
    except Exception as exc:  # pyarrow raises its own ArrowInvalid/OSError family
        raise InputError(f"cannot read parquet: {str(exc).splitlines()[0]}", path=path) from None
    rows = table.to_pylist()
    for row in rows:
        for key in _JSON_COLUMNS:
            if key in row:
                row[key] = _maybe_json(row[key])
    return cast("list[dict[str, Any]]", rows)
