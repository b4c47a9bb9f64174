"""Which roles play a shipped student: the ones whose ``ROLE.gguf`` is in taskbench/bundled/students; the others
play the base, and a run says which model played which role. With no student shipped, --students is refused in
one line naming where they go."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_runner import run
import taskbench.llm.providers.llamacpp as llamacpp
from taskbench.agents.config import STUDENT_BASE, student_models
from taskbench.agents.eval import demo_config, students_shipped
from taskbench.errors import ConfigError


@pytest.fixture
def shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(llamacpp, "STUDENTS_DIR", tmp_path)
    return tmp_path


def test_no_student_shipped(shipped: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert not students_shipped() and demo_config().role_models == {}
    with pytest.raises(ConfigError, match="no student ships in"):
        student_models()
    code, _, err = run(capsys, "agents", "eval", "--env", "restbench-tmdb", "--task-set", "own", "--agent", "react",
                       "--model", STUDENT_BASE, "--students", "-o", str(shipped / "run"))
    assert code == 2 and "no student ships in" in err and "Traceback" not in err


def test_the_roles_with_a_student_play_it_and_the_others_the_base(shipped: Path) -> None:
    for role in ("grounding", "review"):
        (shipped / f"{role}.gguf").write_bytes(b"GGUF")
    assert students_shipped()
    models = student_models()
    assert models == {"grounding": f"{STUDENT_BASE}+student:grounding", "review": f"{STUDENT_BASE}+student:review"}
    config = demo_config()  # the main job's agents stage uses what ships
    assert config.role_models == models
    by_role = config.models_by_role()
    assert by_role["execution"] == by_role["react"] == STUDENT_BASE and by_role["grounding"].endswith("student:grounding")
    assert demo_config(students=False).role_models == {}
    with pytest.raises(ConfigError, match="adapters of"):
        student_models("llamacpp/qwen2.5-coder-1.5b")
