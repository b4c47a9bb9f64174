"""What one request is sent with: its demonstrations and the JSON Schema its answer must fill.

:class:`RequestContext` is built once per dataset from the prediction options and answers, per sample,
``(demos, schema)``:

- demos: ``fixed`` (the reference scripts' demo ids, see :mod:`taskbench.predict.demos`) or ``retrieved``
  (the most similar other samples of the dataset, :class:`~taskbench.predict.retrieval.DemoRetriever`);
- schema (structured output only): the step-aligned task plan (:func:`~taskbench.predict.plan.plan_schema`,
  the default) or the reference task-graph shape (:func:`~taskbench.llm.schemas.task_graph_schema`); with a
  shortlist, the plan's tool choice is restricted to the ``shortlist`` most relevant tools plus the demos'
  tools (:class:`~taskbench.predict.retrieval.ToolShortlist`).

Schemas are cached by their tool set, so a dataset without shortlists builds one schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..schema import Sample, ToolLibrary
from .demos import demo_candidates, demos_for


class RequestContext:
    """Per-request demos and schema for one dataset (see the module docstring)."""

    def __init__(
        self,
        library: ToolLibrary,
        samples: Sequence[Sample],
        options: Any,
        *,
        dataset_name: str | None = None,
    ) -> None:
        self.library = library
        self.options = options
        self.shots = int(options.shots)
        self.selection = getattr(options, "demo_selection", "fixed")
        self.plan = bool(getattr(options, "plan", True))
        self.shortlist_k = getattr(options, "shortlist", None)
        self.candidates = (
            demo_candidates(samples, library, name=dataset_name)
            if self.shots and self.selection == "fixed"
            else []
        )
        self._retriever = None
        if self.shots and self.selection == "retrieved":
            from .retrieval import DemoRetriever

            self._retriever = DemoRetriever(samples)
        self._shortlist = None
        if self.shortlist_k and options.structured and self.plan:
            from .retrieval import ToolShortlist

            self._shortlist = ToolShortlist(library)
        self._schemas: dict[tuple[str, ...] | None, dict[str, Any]] = {}

    def demos(self, sample_id: str, request: str) -> list[Sample]:
        """The demonstrations for one sample."""
        if not self.shots:
            return []
        if self._retriever is not None:
            return self._retriever.retrieve(sample_id, request, self.shots)
        return demos_for(sample_id, self.candidates, self.shots)

    def tools(self, request: str, demos: Sequence[Sample]) -> list[str] | None:
        """The tool names the answer may use (None: every tool of the library)."""
        if self._shortlist is None:
            return None
        also = [t for d in demos for t in d.tool_names]
        return self._shortlist.shortlist(request, int(self.shortlist_k or 0), also=also)

    def schema(self, tools: Sequence[str] | None = None) -> dict[str, Any] | None:
        """The JSON Schema for an answer over ``tools`` (None when output is not structured)."""
        if not self.options.structured:
            return None
        key = None if tools is None else tuple(tools)
        if key not in self._schemas:
            if self.plan:
                from .plan import plan_schema

                self._schemas[key] = plan_schema(self.library, tools)
            else:
                from ..llm.schemas import task_graph_schema

                self._schemas[key] = task_graph_schema(self.library)
        return self._schemas[key]

    def for_sample(self, sample_id: str, request: str) -> tuple[list[Sample], dict[str, Any] | None]:
        """``(demos, schema)`` for one sample."""
        demos = self.demos(sample_id, request)
        return demos, self.schema(self.tools(request, demos))


__all__ = ["RequestContext"]
