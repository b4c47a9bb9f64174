"""The native boundary: the llama.cpp build scan, the child-process decode probe, and what a crash looks like.

The scan test on the installed library is the one that would have caught a native build with AMX kernels
(it fails on such a build); the scanner itself is tested on real machine code compiled here with AMX and
AVX-512 instructions. Crashes are real: children that die of SIGILL and SIGSEGV.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from taskbench.llm import native

X86 = platform.machine() == "x86_64"


# ------------------------------------------------------------------------------------------- the scanner


def test_scan_names_each_extension_beyond_the_baseline() -> None:
    lines = [
        "  4010a0:\ttileloadd (%rsi,%rdx,1),%tmm0",
        "  4010a8:\tvpaddd %zmm1,%zmm2,%zmm3",
        "  4010b0:\tkmovw  %k1,%eax",
        "  4010b8:\t{vex} vpdpbusd %ymm2,%ymm1,%ymm0",
        "  4010c0:\tvfmadd231ps %ymm2,%ymm1,%ymm0",
        "  4010c8:\tvaddps %ymm2,%ymm1,%ymm0",
        "0000000000401000 <f>:",  # a label, not an instruction
    ]
    v3 = native.scan_disassembly(lines, "x86-64-v3")
    assert v3.found == {"AMX": 1, "AVX-512": 2, "AVX-VNNI": 1}
    assert "tileloadd" in v3.examples["AMX"] and not v3.clean
    v2 = native.scan_disassembly(lines, "x86-64-v2")
    assert v2.found["AVX/AVX2"] >= 3 and v2.found["FMA"] == 1
    assert native.scan_disassembly(lines[4:], "x86-64-v3").clean  # AVX2 and FMA are inside v3
    with pytest.raises(ValueError, match="unknown baseline"):
        native.scan_disassembly([], "x86-64-v9")


@pytest.mark.skipif(not X86 or not shutil.which("gcc") or not shutil.which("objdump"),
                    reason="needs x86-64, gcc and objdump")
def test_scan_finds_amx_and_avx512_in_real_machine_code(tmp_path: Path) -> None:
    # what a native build on an AMX server contains: tile loads and 512-bit registers. Never executed here.
    src = tmp_path / "kernels.c"
    src.write_text(textwrap.dedent("""
        void amx_kernel(void) { __asm__ volatile("tilerelease"); }
        void avx512_kernel(void) { __asm__ volatile("vpaddd %zmm1, %zmm2, %zmm3"); }
        int portable(int x) { return x * 3 + 1; }
    """))
    lib = tmp_path / "libkernels.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True)
    result = native.scan_library(lib, "x86-64-v3")
    assert result.error is None
    assert set(result.found) == {"AMX", "AVX-512"}, result.summary()
    assert "beyond x86-64-v3" in result.summary()
    clean = tmp_path / "libclean.so"
    src.write_text("int portable(int x) { return x * 3 + 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(clean), str(src)], check=True)
    assert native.scan_library(clean, "x86-64-v3").clean


def test_scan_without_objdump_says_so(tmp_path: Path) -> None:
    result = native.scan_library(tmp_path / "x.so", objdump=str(tmp_path / "no-objdump"))
    assert result.error and not result.clean


@pytest.mark.skipif(not X86 or not shutil.which("objdump"), reason="needs x86-64 and objdump")
def test_installed_llama_cpp_uses_nothing_beyond_the_baseline() -> None:
    """Fails on a natively compiled llama-cpp-python (AMX, AVX-512 or AVX-VNNI kernels): such a build dies of
    SIGILL on CPUs without them, or where a hypervisor traps AMX. `make rebuild-llama` makes a portable one."""
    libs = native.llama_libraries()
    if not libs:
        pytest.skip('llama-cpp-python is not installed (pip install "taskbench[llamacpp]")')
    cpu = [p for p in libs if p.name.startswith("libggml-cpu")]
    assert cpu, f"no libggml-cpu among {libs}"
    for lib in cpu:  # the CPU backend holds every compute kernel
        result = native.scan_library(lib, "x86-64-v3")
        assert result.error is None, result.summary()
        assert result.clean, f"{result.summary()} (e.g. {result.examples}); {native.REBUILD_HINT}"


# ------------------------------------------------------------------------------------------- CPU facts


def test_cpu_features_and_baseline_from_cpuinfo() -> None:
    amx_server = ("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum\nflags\t\t: fpu sse4_1 sse4_2 ssse3 "
                  "popcnt cx16 lahf_lm avx avx2 bmi1 bmi2 f16c fma movbe xsave avx512f avx512bw avx512cd "
                  "avx512dq avx512vl amx_tile amx_int8 amx_bf16\n")
    features = native.cpu_features(amx_server)
    assert {"amx_tile", "avx512f", "avx2"} <= features
    assert native.baseline_of(features) == "x86-64-v4"
    assert native.cpu_model(amx_server).startswith("Intel(R) Xeon")
    old = "flags\t: fpu sse4_1 sse4_2 ssse3 popcnt cx16 lahf_lm\n"
    assert native.baseline_of(native.cpu_features(old)) == "x86-64-v2"
    assert native.baseline_of(native.cpu_features("flags\t: fpu\n")) is None
    assert native.interesting_features(features)["amx_tile"] is True


@pytest.mark.parametrize(("code", "name"), [(-4, "SIGILL"), (132, "SIGILL"), (-11, "SIGSEGV"), (-9, "SIGKILL"),
                                            (0, None), (1, None)])
def test_signal_names(code: int, name: str | None) -> None:
    assert native.signal_name(code) == name


# ------------------------------------------------------------------------------------------- the probe


def _dies_of(sig: str) -> list[str]:
    return [sys.executable, "-c",
            "import json, os, signal; print(json.dumps({'stage': 'imported', 'system_info': 'CPU: AMX_INT8 = 1'}),"
            f" flush=True); print(json.dumps({{'stage': 'loaded'}}), flush=True); os.kill(os.getpid(), signal.{sig})"]


def test_a_child_killed_by_sigill_is_one_line_with_cause_and_fix() -> None:
    result = native.probe_decode("model.gguf", command=_dies_of("SIGILL"))
    assert not result.ok and result.signal == "SIGILL" and result.returncode == -signal.SIGILL
    assert "\n" not in result.message
    assert result.message.startswith("llama.cpp died of SIGILL in its first decode (illegal instruction")
    assert "GGML_NATIVE=OFF" in result.message and "make rebuild-llama" in result.message
    assert result.system_info == "CPU: AMX_INT8 = 1"


def test_a_real_segfault_in_native_code_is_reported() -> None:
    crash = [sys.executable, "-c", "import ctypes; ctypes.string_at(0)"]  # a real NULL read in C
    result = native.probe_decode("model.gguf", command=crash)
    assert not result.ok and result.signal == "SIGSEGV"
    assert "while importing llama.cpp" in result.message and "segmentation fault" in result.message


def test_a_probe_that_hangs_times_out() -> None:
    result = native.probe_decode("m.gguf", command=[sys.executable, "-c", "import time; time.sleep(30)"],
                                 timeout=1)
    assert not result.ok and "did not finish" in result.message


def test_ensure_llama_runs_raises_once_and_remembers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TASKBENCH_NATIVE_STAMPS", str(tmp_path / "cache" / "native-probes"))
    calls: list[str] = []
    real_probe = native.probe_decode

    def crashing(path, **kw):
        calls.append(str(path))
        return real_probe(path, command=_dies_of("SIGILL"))

    monkeypatch.setattr(native, "probe_decode", crashing)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setattr(native, "_FAILED", {})
    with pytest.raises(native.NativeCrashError, match="SIGILL"):
        native.ensure_llama_runs(model)
    with pytest.raises(native.NativeCrashError, match="SIGILL"):
        native.ensure_llama_runs(model)
    assert len(calls) == 1  # the second call did not start another child

    ok_calls: list[str] = []

    def passing(path, **kw):
        ok_calls.append(str(path))
        return native.ProbeResult(ok=True, message="fine", seconds=0.1)

    monkeypatch.setattr(native, "probe_decode", passing)
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF2")
    native.ensure_llama_runs(other)
    native.ensure_llama_runs(other)
    assert len(ok_calls) == 1  # a success is remembered in the cache directory
    assert list((tmp_path / "cache" / "native-probes").glob("*.ok"))
    monkeypatch.setenv("TASKBENCH_NATIVE_PROBE", "0")
    native.ensure_llama_runs(tmp_path / "third.gguf")
    assert len(ok_calls) == 1


def test_the_provider_refuses_a_crashing_build_without_dying(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """The whole process must survive: the crash happens in the probe's child, the caller gets a ModelError."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from taskbench.errors import ModelError
    from taskbench.llm import get_model
    from taskbench.llm.weights import KNOWN_WEIGHTS, locate_packaged_file

    if locate_packaged_file(KNOWN_WEIGHTS["smollm2-135m"].chunks[0]) is None:
        pytest.skip("the tiny test model is not installed")
    monkeypatch.setenv("TASKBENCH_NATIVE_STAMPS", str(tmp_path / "stamps"))
    monkeypatch.setattr(native, "_FAILED", {})
    real_probe = native.probe_decode
    monkeypatch.setattr(native, "probe_decode", lambda path, **kw: real_probe(path, command=_dies_of("SIGILL")))
    model = get_model("llamacpp/smollm2-135m", cache=False)
    with pytest.raises(ModelError, match="died of SIGILL"):
        model.generate_sync("hello")


@pytest.mark.model
@pytest.mark.slow
def test_a_real_decode_in_a_child_process() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from taskbench.llm.weights import KNOWN_WEIGHTS, locate_packaged_file, resolve_model_path

    if locate_packaged_file(KNOWN_WEIGHTS["smollm2-135m"].chunks[0]) is None:
        pytest.skip("the tiny test model is not installed")
    result = native.probe_decode(resolve_model_path("smollm2-135m"), n_threads=1)
    assert result.ok, result.message
    assert result.details["decoded"]["prompt_tokens"] >= 32 and "AVX2" in (result.system_info or "")


# ------------------------------------------------------------------------------------------- the suite


def test_a_native_crash_fails_its_test_and_the_suite_goes_on(pytester: pytest.Pytester) -> None:
    """A test marked ``model`` runs forked: its SIGILL fails it with the signal named; the others still run and
    the summary line is printed."""
    pytester.makeconftest("pytest_plugins = ['forked_native']\n")
    pytester.makeini("[pytest]\nmarkers =\n    model: runs llama.cpp\n")
    pytest.importorskip("pytest_timeout", reason="pytest-timeout is not installed")
    pytester.makepyfile(test_crashy=textwrap.dedent("""
        import os, signal
        import pytest

        @pytest.mark.model
        def test_llama_dies():
            os.kill(os.getpid(), signal.SIGILL)

        def test_before():
            assert True

        def test_after():
            assert True

        @pytest.mark.model
        def test_hangs():
            import time
            time.sleep(60)
    """))
    env_path = os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])
    pytester._monkeypatch.setenv("PYTHONPATH", env_path)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-o", "timeout=3")
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    assert "CRASHED with signal 4 (SIGILL)" in out
    assert "the isolated test was stopped" in out and "Timeout" in out  # a hung child is killed, the suite goes on
    assert "2 failed, 2 passed" in out and "INTERNALERROR" not in out


def test_a_forked_test_that_skips_is_summarised(pytester: pytest.Pytester) -> None:
    """A ``model`` test that skips (in its body or by a skipif mark) comes back from its child process with the
    skip's (path, line, reason) as a JSON list; -ra's summary asserted on a tuple and the run ended in a
    traceback instead of its summary line."""
    pytester.makeconftest("pytest_plugins = ['forked_native']\n")
    pytester.makeini("[pytest]\nmarkers =\n    model: runs llama.cpp\n")
    pytester.makepyfile(test_skippy=textwrap.dedent("""
        import pytest

        @pytest.mark.model
        def test_skips_inside():
            pytest.skip("no tiny model here")

        @pytest.mark.model
        @pytest.mark.skipif(True, reason="not wanted")
        def test_skips_by_mark():
            pass
    """))
    env_path = os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])
    pytester._monkeypatch.setenv("PYTHONPATH", env_path)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-ra")
    out = result.stdout.str()
    assert result.ret == 0, out
    assert "SKIPPED [1]" in out and "no tiny model here" in out and "not wanted" in out
    assert "2 skipped" in out and "AssertionError" not in out


# ------------------------------------------------------------------------------------------- doctor


def test_doctor_reports_json_and_exit_code(tmp_path: Path) -> None:
    env = dict(os.environ, TASKBENCH_CACHE=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "taskbench", "doctor", "--json", "--no-sandbox",
                           str(tmp_path / "runs")], capture_output=True, text=True, env=env, timeout=300)
    checks = json.loads(proc.stdout)
    names = {(c["section"], c["name"]) for c in checks}
    assert ("machine", "cpu") in names and ("extras", "serve") in names and ("tools", "bwrap") in names
    fails = [c for c in checks if c["level"] == "fail"]
    assert proc.returncode == (1 if fails else 0), proc.stderr
