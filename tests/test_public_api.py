"""The curated public API: every name in ``taskbench.__all__`` resolves, and importing is cheap."""

from __future__ import annotations

import subprocess
import sys

import taskbench


def test_every_public_name_resolves():
    for name in taskbench.__all__:
        assert getattr(taskbench, name) is not None, name
    assert set(taskbench.__all__) <= set(dir(taskbench))


def test_unknown_name_is_an_attribute_error():
    try:
        taskbench.does_not_exist  # noqa: B018
    except AttributeError as exc:
        assert "does_not_exist" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")


def test_subpackage_exports_resolve():
    import taskbench.eval as ev
    import taskbench.predict as pr
    import taskbench.report as rp

    for mod in (ev, pr, rp):
        for name in mod.__all__:
            assert getattr(mod, name) is not None, (mod.__name__, name)


def test_cli_import_does_not_build_the_data_model():
    # `taskbench evaluate` must not pay for pydantic model construction it does not need
    code = "import sys, taskbench.cli.main; print('taskbench.schema.graph' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
