"""`taskbench doctor`: what this machine has and what taskbench can use, each as one checked line.

The checks that matter most are the native ones: the CPU's features, what the installed llama.cpp was
compiled to use (its own system info, and a disassembly scan for instructions beyond the project's
x86-64-v3 baseline), and one decode of a real model in a child process, so that a build this CPU cannot run
is one line naming the cause and the fix instead of a silent SIGILL. Then the sandbox, the optional extras,
the outside tools some features use, and the state of earlier runs (a run that died says so).

Library code: :func:`diagnose` returns :class:`Check` rows; the CLI prints them.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..llm import native

Level = Literal["ok", "warn", "fail", "info"]

# extension found by the scan -> the CPU flag it needs
_NEEDS = {"AMX": "amx_tile", "AVX-512": "avx512f", "AVX-VNNI": "avx_vnni", "AVX/AVX2": "avx2", "FMA": "fma",
          "F16C": "f16c"}

EXTRAS: dict[str, tuple[str, ...]] = {
    "llamacpp": ("llama_cpp",),
    "serve": ("fastapi", "uvicorn"),
    "review": ("fastapi", "uvicorn"),
    "restbench": ("httpx", "jmespath"),
    "mcp": ("mcp",),
    "hub": ("huggingface_hub", "pyarrow"),
    "ray": ("ray", "redis"),
    "bertscore": ("torch", "transformers"),
}
"""Optional extras and the modules each one brings."""

TOOLS: dict[str, str] = {
    "bwrap": "the code sandbox of the agents (apt-get install bubblewrap)",
    "objdump": "the llama.cpp build scan (apt-get install binutils)",
    "chromium": "browser tests of the review and graph pages (apt-get install chromium)",
    "redis-server": "the Redis response cache's tests (apt-get install redis-server)",
    "node": "MCP servers published on npm",
}


@dataclass
class Check:
    """One line of the report."""

    section: str
    name: str
    level: Level
    text: str
    data: dict[str, object] = field(default_factory=dict)


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine_checks(cpuinfo: str | None = None) -> list[Check]:
    """The CPU, its x86-64 level and the flags that decide which llama.cpp builds run."""
    features = native.cpu_features(cpuinfo)
    flags = native.interesting_features(features)
    level = native.baseline_of(features)
    have = " ".join(n for n, on in flags.items() if on) or "-"
    out = [
        Check("machine", "platform", "info", f"{platform.system()} {platform.machine()}, Python "
              f"{platform.python_version()}, {os.cpu_count()} CPUs"),
        Check("machine", "cpu", "info", f"{native.cpu_model(cpuinfo)}; x86-64 level: {level or 'unknown'}; "
              f"has: {have}", {"features": sorted(features), "level": level}),
    ]
    if platform.machine() in ("x86_64", "AMD64") and level is None:
        out.append(Check("machine", "baseline", "warn", "this CPU lacks SSE4.2/POPCNT (below x86-64-v2): the "
                         "embedded model's builds do not target it"))
    elif level == "x86-64-v2":
        out.append(Check("machine", "baseline", "warn", "this CPU has no AVX2: build llama.cpp with "
                         "`make rebuild-llama LLAMA_BASELINE=x86-64-v2`"))
    return out


def llama_checks(*, decode: bool, model: str | None = None, scan: bool = True,
                 cpuinfo: str | None = None) -> list[Check]:
    """llama-cpp-python's version and build, the scan of its CPU library, and (``decode``) a child decode."""
    version = _version("llama-cpp-python") or _version("llama_cpp_python")
    if version is None or importlib.util.find_spec("llama_cpp") is None:
        return [Check("llama.cpp", "installed", "warn", 'llama-cpp-python is not installed: the embedded model '
                      'is unavailable (make install, or pip install "taskbench[llamacpp]")')]
    out = [Check("llama.cpp", "installed", "ok", f"llama-cpp-python {version}")]
    imported = native.probe_decode(None, timeout=120)
    if imported.ok:
        out.append(Check("llama.cpp", "build", "info", f"compiled-in: {(imported.system_info or '-').strip()}"))
    else:
        out.append(Check("llama.cpp", "build", "fail", imported.message))
        return out
    features = native.cpu_features(cpuinfo)
    if scan and platform.machine() == "x86_64":
        libs = native.llama_libraries()
        cpu_libs = [p for p in libs if p.name.startswith("libggml-cpu")] or [
            p for p in libs if p.name.startswith("libggml.")]  # older builds keep the CPU kernels in libggml
        for lib in cpu_libs:
            result = native.scan_library(lib, "x86-64-v3")
            if result.error:
                out.append(Check("llama.cpp", f"scan {lib.name}", "warn", result.summary()))
                continue
            missing = [ext for ext in result.found if _NEEDS.get(ext) not in features]
            if missing:
                out.append(Check("llama.cpp", f"scan {lib.name}", "fail",
                                 f"{lib.name} uses {', '.join(missing)}, which this CPU lacks: it will die of "
                                 f"SIGILL; {native.REBUILD_HINT}", {"found": result.found}))
            elif result.found:
                out.append(Check("llama.cpp", f"scan {lib.name}", "warn",
                                 f"{lib.name} uses {', '.join(sorted(result.found))} beyond x86-64-v3: it runs "
                                 "here but not on CPUs without them (a native build; AMX also traps on some "
                                 f"hypervisors). For a portable build: {native.REBUILD_HINT}",
                                 {"found": result.found}))
            else:
                out.append(Check("llama.cpp", f"scan {lib.name}", "ok", f"{lib.name}: nothing beyond x86-64-v3"))
    if decode:
        path, label = _probe_model(model)
        if path is None:
            out.append(Check("llama.cpp", "decode", "warn", label))
        else:
            probe = native.probe_decode(path, n_threads=min(2, os.cpu_count() or 1))
            out.append(Check("llama.cpp", "decode", "ok" if probe.ok else "fail",
                             (f"{label}: loaded and decoded a token in a child process ({probe.seconds:.1f} s)"
                              if probe.ok else f"{label}: {probe.message}"),
                             {"signal": probe.signal, "seconds": round(probe.seconds, 2)}))
    return out


def _probe_model(model: str | None) -> tuple[Path | None, str]:
    """The GGUF file to probe: ``model`` (an alias or a path), else the default model, else the tiny one."""
    from ..errors import TaskbenchError
    from ..llm.weights import DEFAULT_ALIAS, KNOWN_WEIGHTS, locate_packaged_file, resolve_model_path

    candidates = [model] if model else [DEFAULT_ALIAS, "smollm2-135m"]
    for name in candidates:
        assert name is not None
        known = KNOWN_WEIGHTS.get(name.lower())
        if known is not None and not model and locate_packaged_file(known.chunks[0]) is None:
            continue
        try:
            return resolve_model_path(name), name
        except (TaskbenchError, OSError) as exc:
            if model:
                return None, f"{name}: {exc}"
    return None, "no model installed to decode with (make install puts the default and the tiny one in place)"


def sandbox_checks() -> list[Check]:
    """Whether agent code can be confined here."""
    from ..envs.sandbox import sandbox_status

    status = sandbox_status()
    if status.available:
        return [Check("sandbox", "bwrap", "ok", f"{status.bwrap} {status.version or ''}; {status.seccomp}".strip())]
    return [Check("sandbox", "bwrap", "warn", f"agent code cannot be confined: {status.reason}")]


def extras_checks() -> list[Check]:
    """Which optional extras are installed."""
    out = []
    for extra, modules in EXTRAS.items():
        if extra == "llamacpp":
            continue
        missing = [m for m in modules if importlib.util.find_spec(m) is None]
        out.append(Check("extras", extra, "ok" if not missing else "info",
                         "installed" if not missing else
                         f"not installed (missing {', '.join(missing)}): pip install \"taskbench[{extra}]\""))
    return out


def tool_checks() -> list[Check]:
    """Outside programs some features use."""
    out = []
    for tool, why in TOOLS.items():
        path = shutil.which(tool)
        out.append(Check("tools", tool, "ok" if path else "info", path or f"not found; needed for {why}"))
    return out


def find_run_dirs(paths: Iterable[str | Path]) -> list[Path]:
    """Run directories (holding a run_log.json) at or one level under each path."""
    from .job import RUN_LOG_FILE

    found: list[Path] = []
    for p in map(Path, paths):
        if (p / RUN_LOG_FILE).is_file():
            found.append(p)
        elif p.is_dir():
            found.extend(sorted(d for d in p.iterdir() if (d / RUN_LOG_FILE).is_file()))
    return found


def run_checks(paths: Sequence[str | Path]) -> list[Check]:
    """The state of earlier runs: complete, incomplete, or died (with the signal and stage when known)."""
    from ..errors import TaskbenchError
    from .job import run_state

    out = []
    for run_dir in find_run_dirs(paths):
        try:
            log, death = run_state(run_dir)
        except (TaskbenchError, OSError) as exc:
            out.append(Check("runs", str(run_dir), "warn", str(exc)))
            continue
        if death is not None:
            out.append(Check("runs", str(run_dir), "fail", f"{death}; rerun the same command to resume it",
                             {"status": "died"}))
        else:
            level: Level = "ok" if log.status == "complete" else "info" if log.status == "running" else "warn"
            resumed = f", resumed {log.resumed} times" if log.resumed else ""
            out.append(Check("runs", str(run_dir), level, f"{log.status}{resumed} (updated {log.updated or '-'})",
                             {"status": log.status}))
    return out


def diagnose(*, decode: bool = False, model: str | None = None, runs: Sequence[str | Path] = ("runs",),
             sandbox: bool = True) -> list[Check]:
    """Every check, in report order."""
    checks = machine_checks() + llama_checks(decode=decode, model=model)
    if sandbox:
        checks += sandbox_checks()
    checks += extras_checks() + tool_checks() + run_checks(runs)
    return checks


def failed(checks: Iterable[Check]) -> list[Check]:
    """The checks that fail (the command exits 1 when there are any)."""
    return [c for c in checks if c.level == "fail"]


__all__ = ["Check", "EXTRAS", "TOOLS", "diagnose", "failed", "find_run_dirs", "llama_checks", "machine_checks",
           "run_checks", "sandbox_checks"]

if __name__ == "__main__":  # pragma: no cover
    for c in diagnose(decode="--decode" in sys.argv):
        print(c.level, c.section, c.name, c.text)
