"""The native boundary: what the CPU has, what the installed llama.cpp was built for, and a probe that runs it.

llama-cpp-python ships llama.cpp compiled on the machine that built the wheel. A build made with llama.cpp's
native CPU detection (``GGML_NATIVE=ON``, pip's default) contains the instructions of *that* CPU: AVX-512, AMX,
AVX-VNNI. On a CPU that lacks one of them, or whose hypervisor lists AMX but traps it, the first decode dies
with SIGILL and takes the whole Python process with it, silently. This module keeps that from happening
unseen:

- :func:`cpu_features` reads the CPU flags (``/proc/cpuinfo``) and :func:`baseline_of` names the highest
  x86-64 level they reach;
- :func:`scan_library` disassembles a shared library (``objdump``) and lists the instructions it contains
  that lie beyond a stated baseline (AMX tiles, AVX-512 registers and masks, VEX AVX-VNNI, and for the v2
  baseline any AVX/FMA/F16C at all);
- :func:`probe_decode` loads a GGUF model and decodes in a **child process**, so a SIGILL or SIGSEGV there
  becomes a :class:`ProbeResult` naming the signal, its likely cause and the fix, and never kills the caller;
- :func:`ensure_llama_runs` is what the ``llamacpp`` provider calls before it loads a model in-process: it
  runs the probe once per (llama.cpp build, CPU, model file) and remembers a success in the cache directory,
  so the cost (about a second) is paid once per install.

The project's own build (``make install``: ``scripts/build-llama-wheel.sh``) targets x86-64-v3 (AVX2, FMA,
F16C, BMI2) with AVX-512 and AMX off; see docs/embedded-model.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ModelError

__all__ = [
    "BASELINES",
    "NativeCrashError",
    "ProbeResult",
    "REBUILD_HINT",
    "ScanResult",
    "baseline_of",
    "cpu_features",
    "ensure_llama_runs",
    "llama_libraries",
    "probe_decode",
    "scan_disassembly",
    "scan_library",
    "signal_name",
]

REBUILD_HINT = (
    "rebuild llama-cpp-python for a portable baseline: `make rebuild-llama` in a taskbench checkout, or "
    "CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF "
    "-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF\" pip install --no-cache-dir "
    "--force-reinstall --no-binary llama-cpp-python llama-cpp-python"
)
"""The fix for a llama.cpp build that uses instructions the CPU cannot run."""

# x86-64 micro-architecture levels, as the CPU flags in /proc/cpuinfo spell their members
BASELINES: dict[str, frozenset[str]] = {
    "x86-64-v2": frozenset({"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"}),
    "x86-64-v3": frozenset({"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3", "avx", "avx2", "bmi1",
                            "bmi2", "f16c", "fma", "movbe", "xsave"}),
    "x86-64-v4": frozenset({"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3", "avx", "avx2", "bmi1",
                            "bmi2", "f16c", "fma", "movbe", "xsave", "avx512f", "avx512bw", "avx512cd",
                            "avx512dq", "avx512vl"}),
}
_INTERESTING = ("sse4_2", "avx", "avx2", "fma", "f16c", "bmi2", "avx_vnni", "avx512f", "avx512bw", "avx512vl",
                "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16")

_SIGNAL_CAUSES = {
    signal.SIGILL: "illegal instruction: llama.cpp was compiled for instructions this CPU cannot run "
                   "(a native build from another CPU, or AMX/AVX-512 that the hypervisor traps)",
    signal.SIGSEGV: "segmentation fault in native code",
    signal.SIGBUS: "bus error in native code (a truncated or changed model file?)",
    signal.SIGFPE: "floating-point exception in native code",
    signal.SIGABRT: "native code aborted (an assertion in llama.cpp; run with verbose=True to see it)",
    signal.SIGKILL: "killed (SIGKILL: the out-of-memory killer, or a user)",
}


class NativeCrashError(ModelError):
    """The embedded llama.cpp crashed in a child process (the parent was protected)."""


def signal_name(returncode: int) -> str | None:
    """``SIGILL`` for a child's return code -4 (or a shell's 132); None when it did not die of a signal."""
    number = -returncode if returncode < 0 else returncode - 128 if 128 < returncode < 128 + 65 else 0
    if not number:
        return None
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _cause(name: str) -> str:
    for sig, text in _SIGNAL_CAUSES.items():
        if sig.name == name:
            return text
    return "native crash"


def cpu_features(cpuinfo: str | None = None) -> frozenset[str]:
    """The CPU's feature flags (``/proc/cpuinfo``'s first ``flags`` line; empty where it cannot be read)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return frozenset()
    for line in cpuinfo.splitlines():
        if line.startswith(("flags", "Features")):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def cpu_model(cpuinfo: str | None = None) -> str:
    """The CPU's model name, or the platform's processor string."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            cpuinfo = ""
    for line in cpuinfo.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def baseline_of(features: Iterable[str]) -> str | None:
    """The highest x86-64 level whose every feature is present, or None (not x86-64, or below v2)."""
    have = set(features)
    best = None
    for name, needed in BASELINES.items():
        if needed <= have:
            best = name
    return best


def interesting_features(features: Iterable[str]) -> dict[str, bool]:
    """The flags that decide which llama.cpp builds can run, each present or not."""
    have = set(features)
    return {name: name in have for name in _INTERESTING}


# ----------------------------------------------------------------------------------------- library scan

# What lies beyond each baseline, as objdump spells it (AT&T syntax). Each pattern names an extension.
_AMX = re.compile(r"\b(tileloadd|tileloaddt1|tilestored|tilezero|tilerelease|ldtilecfg|sttilecfg|"
                  r"tdpb[su][su]d|tdpbf16ps|tdpfp16ps|tcmmimfp16ps|tcmmrlfp16ps)\b")
_AVX512 = re.compile(r"%zmm\d+|%k[0-7]\b|\{%k[0-7]\}|\bkmov[bwdq]\b|\bvpternlog[dq]\b")
_AVX_VNNI = re.compile(r"\{vex\}\s+vpdpbu?s[sd]s?\b|\{vex\}\s+vpdpws?s[sd]s?\b")
_AVX = re.compile(r"%ymm\d+")
_FMA = re.compile(r"\bvfn?m(add|sub)\d{3}[ps][sd]\b")
_F16C = re.compile(r"\bvcvtp[hs]2p[hs]\b")

_BEYOND: dict[str, list[tuple[str, re.Pattern[str]]]] = {
    "x86-64-v4": [("AMX", _AMX), ("AVX-VNNI", _AVX_VNNI)],
    "x86-64-v3": [("AMX", _AMX), ("AVX-512", _AVX512), ("AVX-VNNI", _AVX_VNNI)],
    "x86-64-v2": [("AMX", _AMX), ("AVX-512", _AVX512), ("AVX-VNNI", _AVX_VNNI), ("AVX/AVX2", _AVX),
                  ("FMA", _FMA), ("F16C", _F16C)],
}


@dataclass
class ScanResult:
    """Instructions of a library that lie beyond a baseline."""

    path: str
    baseline: str
    found: dict[str, int] = field(default_factory=dict)
    """Extension -> number of instructions using it."""
    examples: dict[str, str] = field(default_factory=dict)
    """Extension -> one disassembled line that uses it."""
    error: str | None = None
    """Why the library could not be scanned (no objdump, not a file), if it could not."""

    @property
    def clean(self) -> bool:
        """Nothing beyond the baseline was found (and the scan ran)."""
        return self.error is None and not self.found

    def summary(self) -> str:
        """One line."""
        if self.error:
            return f"{self.path}: not scanned ({self.error})"
        if not self.found:
            return f"{self.path}: nothing beyond {self.baseline}"
        parts = ", ".join(f"{name} x{n}" for name, n in sorted(self.found.items()))
        return f"{self.path}: instructions beyond {self.baseline}: {parts}"


def scan_disassembly(lines: Iterable[str], baseline: str = "x86-64-v3", *, path: str = "<text>") -> ScanResult:
    """Scan objdump ``-d`` output for instructions beyond ``baseline`` (pure; :func:`scan_library` feeds it)."""
    if baseline not in _BEYOND:
        raise ValueError(f"unknown baseline {baseline!r}; known: {', '.join(_BEYOND)}")
    result = ScanResult(path=path, baseline=baseline)
    checks = _BEYOND[baseline]
    for line in lines:
        if "\t" not in line:  # instruction lines are "addr:\tbytes\tmnemonic operands"
            continue
        text = line.split("\t", 2)[-1]
        for name, pattern in checks:
            if pattern.search(text):
                result.found[name] = result.found.get(name, 0) + 1
                result.examples.setdefault(name, " ".join(text.split()))
    return result


def scan_library(path: str | Path, baseline: str = "x86-64-v3", *, objdump: str | None = None) -> ScanResult:
    """Disassemble ``path`` with objdump and list what it uses beyond ``baseline``."""
    tool = objdump or shutil.which("objdump")
    result = ScanResult(path=str(path), baseline=baseline)
    if tool is None:
        result.error = "objdump not found (apt-get install binutils)"
        return result
    if not Path(path).is_file():
        result.error = "no such file"
        return result
    proc = subprocess.Popen([tool, "-d", "--no-show-raw-insn", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace")
    assert proc.stdout is not None
    scanned = scan_disassembly(proc.stdout, baseline, path=str(path))
    _, err = proc.communicate()
    if proc.returncode != 0:
        result.error = f"objdump failed: {err.strip()[:200]}"
        return result
    return scanned


def llama_libraries() -> list[Path]:
    """The shared libraries of the installed llama-cpp-python (``libggml-cpu*.so`` first), without importing
    it (importing loads the libraries into this process)."""
    import importlib.util

    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return []
    roots = [Path(p) for p in spec.submodule_search_locations]
    seen: dict[str, Path] = {}
    for root in roots:
        for pattern in ("lib/*.so*", "*.so*", "lib/*.dylib", "lib/*.dll"):
            for p in sorted(root.glob(pattern)):
                # one entry per library: a wheel holds libx.so, libx.so.0 and libx.so.0.1.2 as copies or links
                base = p.name.split(".", 1)[0]
                if p.is_file():
                    seen.setdefault(base, p.resolve())
    return sorted(seen.values(), key=lambda p: (not p.name.startswith("libggml-cpu"), p.name))


# ----------------------------------------------------------------------------------------- the probe

@dataclass
class ProbeResult:
    """How a llama.cpp decode in a child process ended."""

    ok: bool
    returncode: int | None = None
    signal: str | None = None
    """The signal that killed the child (``SIGILL``), if one did."""
    message: str = ""
    """One line: what happened, the cause and the fix."""
    system_info: str | None = None
    """llama.cpp's ``llama_print_system_info()`` from the child (the compiled-in CPU features)."""
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)


_PROBE = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    import llama_cpp
    info = llama_cpp.llama_print_system_info()
    info = info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)
    print(json.dumps({"stage": "imported", "system_info": info}), flush=True)
    path, threads = sys.argv[1], int(sys.argv[2])
    if path:
        llm = llama_cpp.Llama(model_path=path, n_ctx=256, n_threads=threads, n_threads_batch=threads,
                              n_batch=64, verbose=False)
        print(json.dumps({"stage": "loaded"}), flush=True)
        # a prompt of a few dozen tokens runs the batched matrix kernels (where AMX / AVX-512 paths live),
        # then one token is decoded
        tokens = llm.tokenize(b"List the tools needed to turn a photo into a caption, then translate it." * 3)
        llm.eval(tokens[:96])
        out = llm.create_completion("Hello", max_tokens=1, temperature=0.0)
        print(json.dumps({"stage": "decoded", "prompt_tokens": len(tokens[:96]),
                          "text": out["choices"][0]["text"]}), flush=True)
    print(json.dumps({"stage": "done", "seconds": time.perf_counter() - t0}), flush=True)
""")


def probe_decode(model_path: str | Path | None, *, n_threads: int = 1, timeout: float = 180.0,
                 command: Sequence[str] | None = None) -> ProbeResult:
    """Import llama.cpp, load ``model_path`` and decode a token, in a child process.

    ``model_path`` None only imports llama.cpp and reads its build's system info. ``command`` replaces the
    child's command line (tests use it to make a child that dies of a chosen signal). A child that dies of a
    signal, times out or fails gives ``ok=False`` with a one-line ``message``; nothing here raises.
    """
    import time

    argv = list(command) if command is not None else [
        sys.executable, "-c", _PROBE, str(model_path or ""), str(max(1, n_threads))]
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(max(1, n_threads)))
    start = time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return ProbeResult(ok=False, message=f"the llama.cpp probe did not finish in {timeout:.0f} s "
                                             "(the machine may be very busy; rerun)",
                           seconds=time.perf_counter() - start)
    except OSError as exc:
        return ProbeResult(ok=False, message=f"the llama.cpp probe could not start: {exc}")
    seconds = time.perf_counter() - start
    stages: dict[str, Any] = {}
    for line in proc.stdout.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and "stage" in doc:
            stages[str(doc["stage"])] = doc
    info = stages.get("imported", {}).get("system_info")
    reached = next((s for s in ("done", "decoded", "loaded", "imported") if s in stages), "start")
    sig = signal_name(proc.returncode)
    if proc.returncode == 0 and "done" in stages:
        return ProbeResult(ok=True, returncode=0, system_info=info, seconds=seconds, details=stages,
                           message="llama.cpp loaded the model and decoded a token" if model_path else
                           "llama.cpp imports")
    where = {"start": "while importing llama.cpp", "imported": "while loading the model",
             "loaded": "in its first decode", "decoded": "after decoding"}.get(reached, "")
    if sig is not None:
        fix = f"; fix: {REBUILD_HINT}" if sig == "SIGILL" else ""
        message = f"llama.cpp died of {sig} {where} ({_cause(sig)}){fix}"
    else:
        tail = " ".join((proc.stderr or "").strip().splitlines()[-1:])[:300]
        message = f"llama.cpp failed {where} (exit {proc.returncode}): {tail or 'no message'}"
    return ProbeResult(ok=False, returncode=proc.returncode, signal=sig, message=message, system_info=info,
                       seconds=seconds, details=stages)


def _stamp_key(model_path: Path) -> str:
    parts: list[str] = [sys.executable, platform.machine(), ",".join(sorted(cpu_features()))]
    for lib in llama_libraries():
        try:
            st = lib.stat()
        except OSError:
            continue
        parts.append(f"{lib}:{st.st_size}:{st.st_mtime_ns}")
    try:
        st = model_path.stat()
        parts.append(f"{model_path.resolve()}:{st.st_size}:{st.st_mtime_ns}")
    except OSError:
        parts.append(str(model_path))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def _stamp_dir() -> Path:
    """Where successful probes are remembered: machine facts, so not under ``TASKBENCH_CACHE`` (which tests and
    users point at throw-away response caches): ``$TASKBENCH_NATIVE_STAMPS``, else the user cache directory."""
    explicit = os.environ.get("TASKBENCH_NATIVE_STAMPS")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "taskbench" / "native-probes"


_FAILED: dict[str, str] = {}


def ensure_llama_runs(model_path: str | Path, *, n_threads: int = 1) -> None:
    """Make sure llama.cpp can run ``model_path`` on this CPU before it is loaded in this process.

    The probe (:func:`probe_decode`) runs once per llama.cpp build, CPU and model file; a success is remembered
    in the cache directory. A crash raises :class:`NativeCrashError` with one line naming the signal, the cause
    and the fix, instead of letting the same crash take this process down. ``TASKBENCH_NATIVE_PROBE=0`` skips it.
    """
    if os.environ.get("TASKBENCH_NATIVE_PROBE", "1").strip().lower() in ("0", "false", "no", "off"):
        return
    path = Path(model_path)
    key = _stamp_key(path)
    if key in _FAILED:  # the same crash again: say it without another child process
        raise NativeCrashError(_FAILED[key])
    stamp: Path | None
    try:
        stamp = _stamp_dir() / f"{key}.ok"
        if stamp.is_file():
            return
    except OSError:
        stamp = None
    result = probe_decode(path, n_threads=min(n_threads, 2))
    if not result.ok:
        if result.signal is not None:  # a timeout or a busy machine may pass next time; a signal will not
            _FAILED[key] = result.message
        raise NativeCrashError(result.message)
    if stamp is not None:
        try:
            stamp.parent.mkdir(parents=True, exist_ok=True)
            tmp = stamp.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps({"model": str(path), "seconds": round(result.seconds, 3),
                                       "system_info": result.system_info}), encoding="utf-8")
            os.replace(tmp, stamp)
        except OSError:
            pass
