"""ConAgents: a grounding, an execution and a review agent, and the two protocols that make them cooperate.

The roles (our reading of the paper, sections 3.1-3.3):

- the **grounding agent** gets the task, the offered tools and the history of plans, results and feedback, and
  proposes the next step: one tool, its arguments and the target to extract, or FINISH with the answer
  (a JSON plan under :func:`~taskbench.agents.prompts.plan_schema`);
- the **execution agent** gets the step and that tool's documentation, writes Python that calls the tool and
  extracts the target, and runs it in the sandbox; a failure comes back as the error;
- the **review agent** judges plans (vague, missing arguments, a tool that does not exist, no progress, a
  premature answer) and executions (faulty code, a tool error, an empty or wrong result), and routes its
  feedback to the grounding or the execution agent.

Protocols (per step, until FINISH or the step cap ``max_steps``):

**automatic**::

    plan <- grounding(history, feedback)
    repeat at most alpha times:              # planning review: one calibration turn = one verdict
        verdict <- review(plan);  accept -> stop;  revise -> plan <- grounding(..., feedback)
    FINISH -> answer
    outcome <- execution(plan)
    repeat at most beta times:               # execution review
        verdict <- review(plan, code, outcome);  accept -> stop
        route grounding -> the feedback goes to the next plan;  route execution -> outcome <- execution(feedback)
    history += (plan, outcome)

After ``alpha`` revisions the last plan stands unreviewed (so at most ``alpha`` verdicts and ``alpha``
revisions per step); the same holds for ``beta``.

**adaptive**: plan and execute step by step; only when an execution fails (an error, a limit, an empty
result) is the review agent called, up to ``beta`` times: it decides whether the plan (route grounding: the
feedback goes to the next plan) or the code (route execution: the code is rewritten) caused it (Figure 6).

Routing: the review agent decides where an execution review's feedback goes (its ``route``), as in the paper.
A rewrite that is the same code as the one it rewrites is not run again. It is sampled once more, at the retry
temperature with its own seed, from the run's own model where a student plays execution (``resampled_rewrites``
counts the ones that differ; at temperature 0 a model, a student above all, writes its failing code again word
for word); when that too is the same code, the retries stop and a failure goes to the next plan as feedback
(counted as ``identical_rewrites``).
One verdict is not the review agent's to give: an accept of a run that failed (the code raised, the tool refused
the call, nothing was extracted, no code at all). The failure is the verdict then, routed by its evidence
(:func:`failed_run_verdict`, :func:`fault_route`), and the review event says ``overruled``.

Ablations (:class:`~taskbench.agents.config.AgentSpec`): no planning review; no execution review; review
replaced by static compiler feedback (a failed run's error text goes back to the execution agent, up to
``beta`` times, with no review agent at all); and ours, ``fault-route``: the evidence of the fault overrides the
review agent's route (:func:`fault_route`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..schema import AssistantMessage, SystemMessage, UserMessage
from . import tooldocs
from .config import AgentSpec
from .episode import CodeOutcome, Episode, StepCap, truncate
from .prompts import (
    CODE_STOP,
    Plan,
    Verdict,
    extract_code,
    format_arguments,
    parse_plan,
    parse_verdict,
    plan_schema,
    render,
    review_schema,
)


@dataclass
class Step:
    """One executed step, as later prompts show it."""

    n: int
    tool: str
    arguments: str
    target: str
    result: str
    ok: bool
    value: Any = None
    """What the step extracted (the code's ``result``), when it ran."""


def step_view(n: int, plan: Plan, outcome: CodeOutcome) -> Step:
    """The history entry for an executed plan."""
    value = outcome.run.result if outcome.ok and outcome.run is not None else None
    return Step(n=n, tool=plan.tool, arguments=format_arguments(plan.arguments), target=plan.target,
                result=outcome.observation, ok=outcome.ok, value=value)


class ConAgents:
    """The three cooperating agents under one protocol (``spec.base``: conagents-auto | conagents-adaptive)."""

    def __init__(self, spec: AgentSpec) -> None:
        self.spec = spec
        self.automatic = spec.base == "conagents-auto"

    # ------------------------------------------------------------------------------------------ episode

    async def run(self, ep: Episode) -> None:
        """Solve ``ep.task``: steps until FINISH or the step cap (then ``ep.stop`` says which cap)."""
        history: list[Step] = []
        feedback = ""
        note = ""
        try:
            for _ in range(ep.budgets.max_steps):
                plan, note = await self._plan(ep, history, feedback, note)
                feedback = ""
                if plan is None:
                    continue
                if plan.finish:
                    ep.final(plan.answer, "grounding")
                    return
                outcome, feedback = await self.execute(ep, history, plan)
                history.append(step_view(len(history) + 1, plan, outcome))
            ep.stop = "step_cap"
        except StepCap:
            if ep.stop == "answer":
                ep.stop = "step_cap"

    # ------------------------------------------------------------------------------------------ grounding

    async def ground(self, ep: Episode, history: list[Step], feedback: str, note: str) -> tuple[Plan | None, str]:
        """One grounding turn -> (plan, note for the next turn when it failed)."""
        messages = [
            SystemMessage(content=render("grounding", tools=tooldocs.tool_list(ep.tools))),
            UserMessage(content=render("grounding_user", task=ep.task.query, steps=history, feedback=feedback,
                                       note=note)),
        ]
        schema, check = plan_schema(ep.tools), _plan_check
        if self.spec.grounded:
            schema, check = _grounded(ep, history)
        turn = await ep.generate("grounding", messages, max_tokens=ep.budgets.plan_tokens, schema=schema,
                                 check=check)
        plan = parse_plan(turn.parsed)[0] if turn.ok else None
        if plan is None:
            return None, f"Your last answer could not be used ({turn.error}). Reply with one short JSON object."
        return plan, ""

    async def _plan(self, ep: Episode, history: list[Step], feedback: str, note: str) -> tuple[Plan | None, str]:
        plan, note = await self.ground(ep, history, feedback, note)
        if plan is None or not self.spec.plan_review:
            return plan, note
        for _ in range(self.spec.alpha):
            verdict = await self.review(ep, "plan", render("review_plan", task=ep.task.query, steps=history,
                                                           plan=plan.describe()), plan=plan)
            if verdict is None or verdict.accept:
                break
            revised, _ = await self.ground(
                ep, history, f"you proposed: {plan.describe()}. The review agent says: {verdict.feedback}", "")
            if revised is None:  # a failed revision keeps the plan it was asked to revise
                break
            plan = revised
        return plan, ""

    # ------------------------------------------------------------------------------------------ execution

    async def _code_turn(self, ep: Episode, messages: list[object], same_as: CodeOutcome | None = None
                         ) -> tuple[CodeOutcome, str]:
        """One execution turn -> (the outcome, the answer's text). ``same_as``: the outcome being rewritten; a
        rewrite that is the same code is sampled once more (:meth:`Episode.generate` with ``resample``), and when that
        is the same code too, it is not run again and that outcome itself is returned."""
        for resample in (0, 1):
            turn = await ep.generate("execution", messages, max_tokens=ep.budgets.code_tokens, stop=CODE_STOP,
                                     resample=resample)
            if not turn.ok:
                return ep.no_code(turn.text, turn.error), turn.text
            code = extract_code(turn.text)
            if code is None:
                return ep.no_code(turn.text), turn.text
            if same_as is None or same_as.code.strip() != code.strip():
                if resample:
                    ep.count("resampled_rewrites")
                return await ep.run_code(code), turn.text
        assert same_as is not None  # only a rewrite is sampled twice
        return same_as, turn.text

    async def execute(self, ep: Episode, history: list[Step], plan: Plan, earlier: list[Step] | None = None
                       ) -> tuple[CodeOutcome, str]:
        """Execute ``plan`` (with the protocol's review or compiler feedback) -> (outcome, feedback for the
        grounding agent, or ""). ``earlier``: results of earlier steps to show the execution agent."""
        doc = _doc(ep, plan.tool)
        messages: list[object] = [
            SystemMessage(content=render("execution")),
            UserMessage(content=render("execution_user", doc=doc, tool=plan.tool,
                                       arguments=format_arguments(plan.arguments), target=plan.target,
                                       task=ep.task.query, earlier=earlier or [],
                                       call=_call(ep, plan))),
        ]
        outcome, answer = await self._code_turn(ep, messages)
        for _ in range(self.spec.beta):
            if self.spec.compiler_feedback:
                if outcome.ok:
                    break
                feedback = ""
            elif not self.spec.exec_review or (not self.automatic and outcome.ok):
                break
            else:
                template = "review_execution" if self.automatic else "review_failure"
                verdict = await self.review(ep, "execution", render(
                    template, task=ep.task.query, steps=history,
                    plan=plan.describe(), code=outcome.code or "(no code)", outcome=outcome.observation),
                    plan=plan, outcome=outcome)
                if verdict is None or verdict.accept:
                    break
                if verdict.route == "grounding":
                    return outcome, verdict.feedback or "the review agent says the plan caused the failure"
                feedback = verdict.feedback
            messages += [AssistantMessage(content=answer or "(no answer)"),
                         UserMessage(content=render("execution_retry", outcome=outcome.observation,
                                                    feedback=feedback))]
            previous = outcome
            outcome, answer = await self._code_turn(ep, messages, same_as=previous)
            if outcome is previous:  # the same code again (measured: 0 of 82 rewrites fixed a run, most repeats)
                ep.count("identical_rewrites")
                if outcome.ok:
                    break
                return outcome, ("The execution agent wrote the same failing code again: "
                                 f"{truncate(outcome.observation, 300)}")
        return outcome, ""

    # ------------------------------------------------------------------------------------------ review

    async def review(self, ep: Episode, target: str, prompt: str, *, plan: Plan,
                     outcome: CodeOutcome | None = None) -> Verdict | None:
        """One review turn -> the verdict (recorded as a ReviewEvent with the problem named and what the
        protocol does with it), or None when the answer was unusable (a failed turn, treated as no
        objection). A named problem is a revision (:attr:`Verdict.accept`); the review agent routes an
        execution review's feedback (:func:`review_route`), or, in the ``fault-route`` variant, the evidence of
        the fault does (:func:`fault_route`). An accept of a run that failed is overruled
        (:func:`failed_run_verdict`: recorded with ``overruled``, counted as ``review_accepts_overruled``)."""
        messages = [SystemMessage(content=render("review", tools=tooldocs.tool_list(ep.tools))),
                    UserMessage(content=prompt)]
        turn = await ep.generate("review", messages, max_tokens=ep.budgets.review_tokens, schema=review_schema(),
                                 check=lambda parsed: parse_verdict(parsed)[1])
        verdict = parse_verdict(turn.parsed)[0] if turn.ok else None
        if verdict is None:
            return None
        overruled = target == "execution" and outcome is not None and not outcome.ok and verdict.accept
        if overruled:
            assert outcome is not None
            verdict = failed_run_verdict(outcome, ep.budgets.observation_chars)
            ep.count("review_accepts_overruled")
        if target == "plan":
            verdict.route = "grounding"
        elif self.spec.fault_route or overruled:
            verdict.route = fault_route(verdict, plan, outcome)
        else:
            verdict.route = review_route(verdict)
        if verdict.accept:
            action = "none"
        elif target == "plan":
            action = "revise_plan"
        else:
            action = "replan" if verdict.route == "grounding" else "rewrite_code"
        ep.review(target, "accept" if verdict.accept else "revise", verdict.feedback,
                  None if verdict.accept else verdict.route, problem=verdict.problem or "none", action=action,
                  overruled=overruled)
        return verdict


def failed_run_verdict(outcome: CodeOutcome, limit: int) -> Verdict:
    """The verdict on a run that failed, from its error alone: a review agent's accept of it is not taken (a run
    that raised, or gave no code, did not do the step, whatever a small reviewer says; measured: a review
    student trained mostly on accepts accepted every failed run of its first RestBench episodes). The tool's
    refusal is a ``tool_error``, nothing extracted an ``empty_result``, anything else ``faulty_code``; the route
    follows the evidence (:func:`fault_route`)."""
    problem = {"ToolError": "tool_error", "EmptyResult": "empty_result"}.get(outcome.error_type or "", "faulty_code")
    return Verdict(problem=problem, verdict="revise",
                   feedback=f"The run failed: {truncate(outcome.observation, min(limit, 400))}")


def _plan_check(parsed: Any) -> str | None:
    return parse_plan(parsed)[1]


def _grounded(ep: Episode, history: list[Step]) -> tuple[dict[str, Any], Any]:
    """The plan schema and check under grounded arguments (values seen so far), counted."""
    from .grounded import parameter_names, seen_values, tool_argument_schemas, ungrounded

    results = [r.content for r in ep.env.results if r.error is None and r.content is not None]
    values = seen_values(ep.task.query, results, [s.value for s in history if s.ok])
    ep.count("grounded_plans")
    if parameter_names(ep.tools)[0]:
        ep.count("grounded_plans_with_ids" if values else "grounded_plans_no_ids_yet")
        ep.count("grounded_values_offered", len(values))

    def check(parsed: Any) -> str | None:
        plan, why = parse_plan(parsed)
        if plan is None:
            return why
        if plan.finish:
            return None
        refused = ungrounded(plan, values, next((t for t in ep.tools if t.name == plan.tool), None))
        if refused is not None:
            ep.count("grounded_refused")
        return refused

    per_tool = tool_argument_schemas(ep.tools, values)
    ep.count("grounded_tools_withheld", sum(1 for v in per_tool.values() if v is None))
    return plan_schema(ep.tools, per_tool=per_tool), check


def review_route(verdict: Verdict) -> str:
    """Where the review agent sends an execution review's feedback: its own ``route`` (the paper's design: the
    review agent decides whether the plan or the code caused the fault); when it gave none that the protocol
    knows, the agent the named problem belongs to, else the execution agent."""
    if verdict.route in ("grounding", "execution"):
        return verdict.route
    return verdict.fault_route() or "execution"


_NOT_THE_CODE = ("ToolError", "EmptyResult", "LimitExceeded")


def fault_route(verdict: Verdict, plan: Plan, outcome: CodeOutcome | None) -> str:
    """Who must fix a faulted execution, by the evidence first (the ``fault-route`` variant, ours; by default the
    review agent decides: :func:`review_route`):

    - the tool rejected the call (a ToolError: 404 for a title passed as an id, a missing argument) and the
      code passed the plan's argument values as given: the plan is wrong -> grounding (the code passed other
      values: execution);
    - the code itself raised (KeyError, TypeError, SyntaxError ...) or gave no code: execution;
    - otherwise (an empty or wrong result, a run that hit a limit) the problem named decides (a plan problem
      -> grounding, faulty code -> execution), and where it can be either, the reviewer's route (execution
      when it gave none)."""
    if outcome is not None and not outcome.ok and outcome.error_type:
        if outcome.error_type == "ToolError":
            followed = all(value.strip() in outcome.code for value in plan.arguments.values())
            return "grounding" if followed else "execution"
        if outcome.error_type not in _NOT_THE_CODE:
            return "execution"
    by_problem = verdict.fault_route()
    if by_problem is not None:
        return by_problem
    return verdict.route if verdict.route in ("grounding", "execution") else "execution"


def _call(ep: Episode, plan: Plan) -> str:
    spec = next((t for t in ep.tools if t.name == plan.tool), None)
    api = ep.api.get(plan.tool) or f"call_tool({plan.tool!r}, ...)"
    return tooldocs.python_call(spec, api, plan.arguments)


def _doc(ep: Episode, tool: str) -> str:
    spec = next((t for t in ep.tools if t.name == tool), None)
    if spec is None:
        return f"{tool}: this tool is not offered in this task (offered: {', '.join(ep.tool_names)})"
    return tooldocs.execution_doc(spec, ep.api[tool])


__all__ = ["ConAgents", "Step", "fault_route", "review_route", "step_view"]
