"""The sandboxed code runner: the execution agent's hands.

Agent-written Python runs in a separate, confined process and comes back as a structured
:class:`SandboxResult` (stdout, the result variable, a structured error with the line in the agent's code,
the limit that stopped it, the tool calls it made, seconds)::

    from taskbench.envs.sandbox import Sandbox

    async with Sandbox(env.call, env.tools()) as box:        # or Sandbox.for_environment(env)
        out = await box.run("movies = GET_search_movie(query='Titanic')\\nresult = movies['results'][0]['id']")
        out.result, out.error, out.tool_calls, out.event(code)  # -> a CodeRunEvent for the trajectory

The flow::

    Sandbox.run(code) --job--> Worker --socket pair--> supervisor (inside bwrap) --fork--> child runs the code
         ^                        ^                                                        |
         |                        +-- ToolChannel <-- /run/taskbench/tools.sock <-- call_tool(...)
         +-- SandboxResult <-- report + stdout/stderr + exit status, usage, limit

Inside, the code has ``call_tool(name, **arguments)`` (returns the tool's JSON result, raises ``ToolError``
carrying ``error``/``status``), one function per tool under its Python name (:func:`~taskbench.schema.python_names`),
and the same in ``import taskbench_sandbox``. See docs/sandbox.md for the threat model and the measured cost.
"""

from ...errors import SandboxError, SandboxUnavailableError
from .channel import ToolHandler
from .models import LimitName, SandboxLimits, SandboxResult, SandboxStatus
from .sandbox import Sandbox, run_code, run_code_sync, sandbox_status

__all__ = [
    "LimitName",
    "Sandbox",
    "SandboxError",
    "SandboxLimits",
    "SandboxResult",
    "SandboxStatus",
    "SandboxUnavailableError",
    "ToolHandler",
    "run_code",
    "run_code_sync",
    "sandbox_status",
]
