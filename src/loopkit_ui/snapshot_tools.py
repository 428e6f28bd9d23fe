"""``ui_snapshot`` (the app's tree as a compact outline with refs) and ``ui_run_steps`` (a short
list of tool calls in one call, with one snapshot delta at the end). Registered by
:func:`loopkit_ui.server_tools.build_server`."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from loopkit_ui.answers import SnapshotAnswer, StepOutcome, StepsAnswer
from loopkit_ui.backends.lookup import resolve
from loopkit_ui.backends.protocol import ElementNotFoundError, TreeNode, UIError
from loopkit_ui.service import UIService, answer
from loopkit_ui.snapshot import SnapshotLimits
from loopkit_ui.strict_arguments import type_problems
from loopkit_ui.tool_hints import hints

__all__ = ["MAX_STEPS", "Step", "add_snapshot_tools"]

MAX_STEPS = 30
# Tools a batch may not hold: a batch in a batch, and the ones that restart or launch apps
# (their answers change what every later step means).
_NOT_IN_STEPS = frozenset({"ui_run_steps", "ui_restart_app", "ui_launch_app"})

Snapshot = Annotated[CallToolResult, SnapshotAnswer]
Steps = Annotated[CallToolResult, StepsAnswer]


class Step(BaseModel):
    """One step of ``ui_run_steps``: a ``ui_*`` tool and its arguments, as in a single call."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(description="a ui_* tool, e.g. ui_click, ui_type_text, ui_assert_text")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="its arguments, exactly as for a single call"
    )


def _part(nodes: list[TreeNode], start: TreeNode) -> list[TreeNode]:
    """``start`` and its subtree (pre-order: the run of nodes deeper than it)."""
    index = next(i for i, n in enumerate(nodes) if n.key == start.key)
    end = index + 1
    while end < len(nodes) and nodes[end].depth > start.depth:
        end += 1
    return nodes[index:end]


def add_snapshot_tools(server: MCPServer, service: UIService) -> None:
    """Add ``ui_snapshot`` and ``ui_run_steps`` to ``server``."""

    async def ui_snapshot(
        window: Annotated[
            str | None, Field(description="only this top-level window (id or title)")
        ] = None,
        target: Annotated[
            str | None, Field(description="only this element and what is inside it (ref, id, name)")
        ] = None,
        max_lines: Annotated[
            int, Field(ge=10, le=3000, description="at most this many lines")
        ] = 400,
        max_depth: Annotated[int, Field(ge=1, le=60, description="at most this many levels")] = 14,
    ) -> Snapshot:
        def run() -> SnapshotAnswer:
            slot = service.slot
            key = None
            if target:
                backend, locator = service.locate(target, None, None, window)
                slot = service.slot_of(backend)
                key = locator.key
            nodes = service.snapshot_nodes(slot)
            part = nodes
            if target:
                start = next((n for n in nodes if n.key == key), None) if key else None
                if start is None:
                    start = resolve(nodes, locator)
                part = _part(nodes, start)
            elif window:
                tops = [n for n in nodes if n.depth == 1 and window in (n.id, n.name)]
                if not tops:
                    titles = [n.label() for n in nodes if n.depth == 1]
                    raise ElementNotFoundError(
                        f"no window with id or title {window!r}; open windows: {titles}"
                    )
                part = _part(nodes, tops[0])
            limits = SnapshotLimits(max_lines=max_lines, max_depth=max_depth)
            lines, notes, truncated = service.outline(slot, part, limits)
            slot.view = service.view_of(nodes)  # the next action's delta starts from here
            return SnapshotAnswer(
                app=slot.name,
                nodes=sum(1 for n in part if n.depth > 0),
                shown=len(lines),
                truncated=truncated,
                lines=lines,
                notes=notes,
            )

        return await service.call(run)

    server.add_tool(
        ui_snapshot,
        title="Snapshot the app with refs",
        annotations=hints("Snapshot the app with refs", "read"),
        description="The app's accessibility tree as a compact outline, one element a line "
        "(role 'name' #id [states] = text [ref=eN]); unnamed layout containers are left out. "
        "Act on any element by its ref: target='e12' (valid until the element disappears). "
        "Every action answers what changed since, with new refs. Typical time: about 5 ms.",
    )

    async def ui_run_steps(
        steps: Annotated[
            list[Step],
            Field(
                min_length=1,
                max_length=MAX_STEPS,
                description="the calls to make in order, each {tool, arguments}",
            ),
        ],
        stop_on_failure: Annotated[
            bool, Field(description="stop at the first step that fails (error or success false)")
        ] = True,
    ) -> Steps:
        tools = {tool.name: tool for tool in await server.list_tools()}
        for number, step in enumerate(steps, 1):
            problem = _refusal(step, tools)
            if problem is not None:
                return answer(f"invalid arguments for ui_run_steps: step {number}: {problem}",
                              error=True)  # fmt: skip
        outcomes: list[StepOutcome] = []
        success = True
        service.quiet = True
        try:
            for number, step in enumerate(steps, 1):
                result = await server.call_tool(step.tool, step.arguments)
                ok, text = _outcome(result)
                outcomes.append(StepOutcome(step=number, tool=step.tool, ok=ok, answer=text))
                if not ok:
                    success = False
                    if stop_on_failure:
                        break
        finally:
            service.quiet = False
        snapshot = None
        if service.snapshots != "none":
            try:
                snapshot = await service.run(lambda: service.delta(service.slot))
            except UIError as error:
                snapshot = [f"# no snapshot: {error}"]
        done = StepsAnswer(success=success, ran=len(outcomes), steps=outcomes, snapshot=snapshot)
        return answer(done, error=not success)

    server.add_tool(
        ui_run_steps,
        title="Run several steps",
        annotations=hints("Run several steps", "act"),
        description=f"Run up to {MAX_STEPS} ui_* calls in order in one call, e.g. "
        "[{tool: 'ui_type_text', arguments: {target: 'NameInput', text: 'Ada'}}, {tool: "
        "'ui_click', arguments: {target: 'e7'}}]; stops at the first failure unless "
        "stop_on_failure=false. Answers each step's outcome and one snapshot delta at the end.",
    )


def _refusal(step: Step, tools: dict[str, Any]) -> str | None:
    """Why a step cannot run (checked for every step before the first runs), or None."""
    if step.tool not in tools:
        names = ", ".join(sorted(n for n in tools if n not in _NOT_IN_STEPS))
        return f"no tool {step.tool!r}; the steps can use: {names}"
    if step.tool in _NOT_IN_STEPS:
        return f"{step.tool} cannot be a step (call it on its own)"
    schema = tools[step.tool].input_schema
    unknown = sorted(set(step.arguments) - set(schema.get("properties", {})))
    if unknown:
        allowed = ", ".join(schema.get("properties", {})) or "no arguments"
        return f"{step.tool} has no argument {', '.join(map(repr, unknown))} (it takes {allowed})"
    problems = type_problems(step.arguments, schema)
    return f"{step.tool}: {'; '.join(problems)}" if problems else None


def _outcome(result: Any) -> tuple[bool, str]:
    """Whether a step's answer is a success, and its text (cut)."""
    content = getattr(result, "content", None) or []
    text = "".join(getattr(block, "text", "") for block in content)
    error = bool(getattr(result, "is_error", False))
    structured = getattr(result, "structured_content", None) or {}
    ok = not error and structured.get("success", True) is not False
    return ok, text if len(text) <= 300 else text[:297] + "..."
