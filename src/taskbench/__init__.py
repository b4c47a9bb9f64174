"""taskbench: turn a tool library into a task-automation benchmark, score LLMs on it, run tool-use agents.

The public API is what ``__all__`` lists; everything else is internal and may change.
"""

from .errors import (
    ConfigError,
    InputError,
    MissingDependencyError,
    ModelError,
    SchemaError,
    TaskbenchError,
)
from .schema import (
    Prediction,
    Sample,
    TaskArgument,
    TaskGraph,
    TaskLink,
    TaskNode,
    Tool,
    ToolGraph,
    ToolLibrary,
    ToolLink,
    ToolParameter,
    Usage,
)

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "InputError",
    "MissingDependencyError",
    "ModelError",
    "Prediction",
    "Sample",
    "SchemaError",
    "TaskArgument",
    "TaskGraph",
    "TaskLink",
    "TaskNode",
    "TaskbenchError",
    "Tool",
    "ToolGraph",
    "ToolLibrary",
    "ToolLink",
    "ToolParameter",
    "Usage",
    "__version__",
]
