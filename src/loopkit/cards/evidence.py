"""Evidence per acceptance criterion, checked by the runner instead of believed.

An :class:`EvidenceLedger` sits below a card run's loop and sees every tool call in the order it
ran (a :class:`~loopkit.middleware.function_invocation.ToolInvocationListener`): which calls
changed the code, built it, started the app, committed, and which were checks in the running app
(the UI server's ``ui_*`` reads, assertions and actions that answered with success). The model
points at its checks with the ``record_evidence`` tool::

    record_evidence(criterion="C2", calls=["call_17_1", "call_17_2"])

and the ledger decides whether they count: each call must exist, be a check that passed, and be
*fresh*: made after the last change to the code, after a successful build of that change
(no failed build after it) and in an app started after that build. :meth:`EvidenceLedger.assess`
says, for every criterion, whether it is verified now; an edit after the evidence makes it stale
again. Which tools do what is an :class:`EvidencePolicy` (the demo's tool names by default).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from loopkit.abstractions.chat import ChatClient
from loopkit.abstractions.tools import FunctionTool, Tool, ToolError
from loopkit.cards.criteria import Criterion
from loopkit.middleware.delegating import DelegatingChatClient
from loopkit.middleware.function_invocation import ToolInvocation

__all__ = [
    "RECORD_EVIDENCE",
    "Assessment",
    "CriterionVerdict",
    "EvidenceLedger",
    "EvidencePolicy",
    "ToolRecord",
]

#: The name of the tool the model records evidence with.
RECORD_EVIDENCE = "record_evidence"

Kind = Literal["edit", "build", "start", "commit", "check", "other"]


@dataclass(frozen=True, slots=True)
class EvidencePolicy:
    """Which tools change the code, build it, start the app, commit, and which are checks."""

    #: Tools that change the code when they succeed (a ``path`` argument names the file).
    edit_tools: frozenset[str] = frozenset({"write_file", "edit_file", "fix_missing_ids"})
    #: Only edits under these folders change the code ("" or empty: every edit does).
    code_folders: tuple[str, ...] = ()
    #: The build tool (None: the app has no build step) and the text of a successful build.
    build_tool: str | None = "build_app"
    build_succeeded: str = "Build succeeded"
    #: Tools that start the app the checks run against.
    start_tools: frozenset[str] = frozenset({"start_app", "ui_restart_app"})
    #: The commit tool (None: the run does not commit; uncommitted changes are then no problem).
    commit_tool: str | None = "git_commit"
    #: Checks: tools with this prefix that answered without an error (and, for an answer in
    #: JSON with ``success``, with ``success: true``) ...
    check_prefix: str = "ui_"
    #: ... except these, which show nothing by themselves (a file written, a screenshot).
    not_checks: frozenset[str] = frozenset(
        {
            "ui_tree",
            "ui_screenshot",
            "ui_hover",
            "ui_start_recording",
            "ui_stop_recording",
            "ui_restart_app",
        }
    )

    def kind(self, name: str, arguments: dict[str, Any]) -> Kind:
        """What a call of ``name`` with ``arguments`` is."""
        if name in self.edit_tools:
            path = arguments.get("path")
            folders = [f.strip("/") for f in self.code_folders if f.strip("/")]
            if isinstance(path, str) and folders:
                inside = any(path.strip("/") == f or path.startswith(f"{f}/") for f in folders)
                return "edit" if inside else "other"
            return "edit"
        if name == self.build_tool:
            return "build"
        if name in self.start_tools:
            return "start"
        if name == self.commit_tool:
            return "commit"
        if name.startswith(self.check_prefix) and name not in self.not_checks:
            return "check"
        return "other"


@dataclass(slots=True)
class ToolRecord:
    """One tool call of the run as the ledger saw it."""

    seq: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    result: str
    error: bool
    kind: Kind
    #: A check that passed, a build that succeeded, a commit that was made, an edit made.
    ok: bool

    def what(self) -> str:
        """``edit_file invoice_app/model.py``: the call in a few words."""
        path = self.arguments.get("path")
        return f"{self.name} {path}" if isinstance(path, str) else self.name

    def change(self) -> str:
        """``your last edit to invoice_app/model.py`` (for an edit: how messages name it)."""
        path = self.arguments.get("path")
        if isinstance(path, str):
            return f"your last edit to {path}"
        return f"your last code change ({self.name})"

    def answer(self) -> Any:
        """The result parsed as JSON (None when it is not JSON)."""
        try:
            return json.loads(self.result)
        except ValueError:
            return None


@dataclass(slots=True)
class Evidence:
    """What ``record_evidence`` recorded for one criterion (the latest call replaces it)."""

    calls: list[str]
    note: str
    seq: int


@dataclass(slots=True)
class CriterionVerdict:
    """A criterion's state: ``verified`` (fresh evidence), ``missing`` (none, or stale) or
    ``unverified`` (manual: not checked in the app)."""

    criterion: Criterion
    status: Literal["verified", "missing", "unverified"]
    evidence: list[str] = field(default_factory=list)
    problem: str | None = None

    def as_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.criterion.id, "status": self.status}
        if self.evidence:
            data["evidence"] = self.evidence
        if self.problem:
            data["problem"] = self.problem
        return data


@dataclass(slots=True)
class Assessment:
    """Every criterion's verdict and the run's other problems (an uncommitted change)."""

    verdicts: list[CriterionVerdict]
    problems: list[str] = field(default_factory=list)

    @property
    def missing(self) -> list[CriterionVerdict]:
        return [v for v in self.verdicts if v.status == "missing"]

    @property
    def ok(self) -> bool:
        """Every criterion that can be checked has fresh evidence, and nothing else is wrong."""
        return not self.missing and not self.problems

    def feedback(self) -> str:
        """What the runner answers a ``RESULT: done`` that is not verified (once)."""
        lines = [f"- {v.problem}" for v in self.missing] + [f"- {p}" for p in self.problems]
        return (
            "The runner does not accept RESULT: done yet; it checks the evidence of every "
            "acceptance criterion itself:\n" + "\n".join(lines) + "\nFix what is missing: build, "
            "start the app, check each criterion live with the ui_* tools, record_evidence with "
            "the ids of those calls (and git_commit the change); then end with the RESULT line "
            "again. This is said once: a RESULT: done that is still not verified ends the run "
            "as failed."
        )

    def reason(self) -> str:
        """The one-line reason of a run that ends unverified."""
        ids = [v.criterion.id for v in self.missing]
        parts = []
        if ids:
            noun = "criterion" if len(ids) == 1 else "criteria"
            parts.append(f"{noun} {', '.join(ids)} not verified")
        parts += self.problems
        return "; ".join(parts)

    def as_data(self) -> list[dict[str, Any]]:
        return [v.as_data() for v in self.verdicts]


class EvidenceLedger:
    """The tool calls of one run and the evidence recorded for ``criteria`` (see the module)."""

    def __init__(self, criteria: Sequence[Criterion], policy: EvidencePolicy | None = None) -> None:
        self.criteria = list(criteria)
        self.policy = policy or EvidencePolicy()
        self.records: list[ToolRecord] = []
        self.evidence: dict[str, Evidence] = {}
        self._by_id: dict[str, ToolRecord] = {}

    # -- watching the run ------------------------------------------------------------------------
    def middleware(self, inner: ChatClient) -> ChatClient:
        """The client below the loop that reports each tool call to this ledger."""
        return _LedgerClient(inner, self)

    def observe(self, invocation: ToolInvocation) -> None:
        """Record one tool call (called by the loop after each call)."""
        call = invocation.call
        arguments = dict(call.arguments or {})
        kind = self.policy.kind(call.name, arguments)
        record = ToolRecord(
            seq=len(self.records),
            call_id=call.call_id,
            name=call.name,
            arguments=arguments,
            result=invocation.result,
            error=invocation.error,
            kind=kind,
            ok=False,
        )
        record.ok = self._succeeded(record)
        self.records.append(record)
        self._by_id[call.call_id] = record

    def _succeeded(self, record: ToolRecord) -> bool:
        if record.error:
            return False
        if record.kind == "build":
            return record.result.lstrip().startswith(self.policy.build_succeeded)
        if record.kind == "check":
            answer = record.answer()
            return not (isinstance(answer, dict) and answer.get("success") is False)
        return True

    # -- the state of the run --------------------------------------------------------------------
    def _last(self, kind: Kind, *, ok: bool | None = None) -> ToolRecord | None:
        for record in reversed(self.records):
            if record.kind == kind and (ok is None or record.ok == ok):
                return record
        return None

    @property
    def last_edit(self) -> ToolRecord | None:
        """The last change to the code (None: the run changed none)."""
        return self._last("edit", ok=True)

    def stale(self, record: ToolRecord) -> str | None:
        """Why the check ``record`` does not show the code as it is now (None: it does)."""
        edit = self.last_edit
        if edit is not None and record.seq < edit.seq:
            return f"made before {edit.change()}"
        if self.policy.build_tool is not None:
            failed = self._last("build", ok=False)
            if failed is not None and record.seq < failed.seq:
                return "made before a build that failed"
            if edit is not None:
                built = self._last("build", ok=True)
                if built is None or built.seq < edit.seq:
                    return f"{edit.change()} was never built (no successful build after it)"
                if record.seq < built.seq:
                    return f"made before {edit.change()} was built"
                started = [
                    r for r in self.records if r.kind == "start" and r.ok and r.seq > built.seq
                ]
                if not started or started[0].seq > record.seq:
                    return f"made in an app started before {edit.change()} was built"
        return None

    def session(self) -> list[ToolRecord]:
        """The calls since the app was first started on the code as it is now: the live
        session a regression script replays (its starts become restarts)."""
        edit = self.last_edit
        floor = edit.seq if edit is not None else -1
        if self.policy.build_tool is not None:
            built = self._last("build", ok=True)
            if built is not None and built.seq > floor:
                floor = built.seq
        starts = [r for r in self.records if r.kind == "start" and r.ok and r.seq > floor]
        if starts:
            floor = starts[0].seq
        return [r for r in self.records if r.seq >= floor]

    # -- record_evidence -------------------------------------------------------------------------
    def record_evidence(
        self,
        criterion: Annotated[str, "the criterion's id, e.g. 'C2'"],
        calls: Annotated[
            list[str],
            "the ids of your earlier tool calls that show it holds: checks in the running app "
            "(ui_get_text, ui_get_cell, ui_assert_*, a ui_click with expect_appear, ...); 'last' "
            "for your latest check, 'last:N' for your latest N checks",
        ],
        note: Annotated[str, "one sentence: what the checks show"] = "",
    ) -> str:
        """Record the evidence that one acceptance criterion holds in the running app."""
        wanted = criterion.strip().upper()
        found = next((c for c in self.criteria if c.id == wanted), None)
        ids = ", ".join(c.id for c in self.criteria) or "none"
        if found is None:
            raise ToolError(f"criterion {criterion!r}: not a criterion of this card (ids: {ids})")
        if found.manual:
            raise ToolError(
                f"{found.id} is marked (manual): it is not checked in the app and needs no "
                "evidence; it is reported as unverified"
            )
        records = self._resolve(calls)
        for record in records:
            problem = self._not_evidence(record)
            if problem is not None:
                raise ToolError(f"{found.id}: call {record.call_id} ({record.what()}) {problem}")
        shown = [r.call_id for r in records]
        self.evidence[found.id] = Evidence(shown, " ".join(note.split()), len(self.records))
        left = [v.criterion.id for v in self.assess().missing]
        tail = f"still without evidence: {', '.join(left)}" if left else "every criterion has some"
        checks = ", ".join(f"{r.call_id} {r.name}" for r in records)
        return f"{found.id}: evidence recorded ({len(records)} check(s): {checks}); {tail}"

    def _resolve(self, calls: Sequence[str]) -> list[ToolRecord]:
        if not calls:
            raise ToolError("calls: give the ids of the checks that show the criterion holds")
        records: list[ToolRecord] = []
        for given in calls:
            key = given.strip()
            if key == "last" or key.startswith("last:"):
                count = 1 if key == "last" else _count(key)
                checks = [r for r in self.records if r.kind == "check" and r.ok]
                if len(checks) < count:
                    raise ToolError(f"calls: {key!r}, but only {len(checks)} check(s) passed yet")
                records.extend(checks[-count:])
                continue
            record = self._by_id.get(key)
            if record is None:
                raise ToolError(
                    f"calls: {key!r} is not the id of a tool call of this run (give the ids of "
                    "your earlier tool calls, or 'last')"
                )
            records.append(record)
        unique = {r.seq: r for r in records}
        return [unique[seq] for seq in sorted(unique)]

    def _not_evidence(self, record: ToolRecord) -> str | None:
        if record.kind != "check":
            return (
                f"is not a check in the running app; cite {self.policy.check_prefix}* calls "
                "that read or assert what the criterion says"
            )
        if not record.ok:
            return "did not pass (its answer was an error or success: false)"
        stale = self.stale(record)
        if stale is not None:
            return f"does not count: {stale}; check again on the app as it is now"
        return None

    def tool(self) -> Tool:
        """``record_evidence`` as a tool for the model."""
        return FunctionTool(
            self.record_evidence,
            name=RECORD_EVIDENCE,
            description=(
                "Records which of your checks in the running app show that an acceptance "
                "criterion holds (C1, C2, ... as the card's criteria are listed). The runner "
                "checks the calls: each must be a ui_* check that passed, made after your last "
                "code change, after a successful build of it and in an app started after that "
                "build. RESULT: done is accepted only when every criterion has such evidence."
            ),
            run_in_thread=False,
        )

    # -- the verdict -----------------------------------------------------------------------------
    def assess(self) -> Assessment:
        """Every criterion's verdict now, and the run's other problems."""
        verdicts = [self._verdict(c) for c in self.criteria]
        problems = []
        uncommitted = self._uncommitted()
        if uncommitted:
            problems.append(uncommitted)
        return Assessment(verdicts, problems)

    def _verdict(self, criterion: Criterion) -> CriterionVerdict:
        if criterion.manual:
            return CriterionVerdict(criterion, "unverified", problem="manual: not checked")
        evidence = self.evidence.get(criterion.id)
        edit = self.last_edit
        after = f" after {edit.change()}" if edit is not None else ""
        if evidence is None:
            return CriterionVerdict(
                criterion,
                "missing",
                problem=f"{criterion.id} was never checked{after}: no record_evidence for it",
            )
        for call_id in evidence.calls:
            stale = self.stale(self._by_id[call_id])
            if stale is not None:
                problem = (
                    f"{criterion.id} was never checked{after}: its evidence ({call_id}) was {stale}"
                    if stale.startswith("made")
                    else f"{criterion.id} was not checked on the code as it is now: {stale}"
                )
                return CriterionVerdict(criterion, "missing", evidence.calls, problem)
        return CriterionVerdict(criterion, "verified", evidence.calls)

    def _uncommitted(self) -> str | None:
        edit = self.last_edit
        if self.policy.commit_tool is None or edit is None:
            return None
        commits = [r for r in self.records if r.kind == "commit" and r.seq > edit.seq]
        if any(r.ok for r in commits):
            return None
        refused = [r for r in commits if not r.ok]
        why = ""
        if refused:
            answer = " ".join(refused[-1].result.split())
            why = f" ({self.policy.commit_tool} was refused: {answer[:200]})"
        return f"{edit.change()} was never committed{why}"


def _count(key: str) -> int:
    try:
        count = int(key.removeprefix("last:"))
    except ValueError:
        count = 0
    if count < 1:
        raise ToolError(f"calls: {key!r}: expected 'last:N' with N a positive number")
    return count


class _LedgerClient(DelegatingChatClient):
    """Forwards requests unchanged; tells the ledger about every tool call the loop made."""

    def __init__(self, inner: ChatClient, ledger: EvidenceLedger) -> None:
        super().__init__(inner)
        self.ledger = ledger

    def on_tool_invoked(self, invocation: ToolInvocation) -> None:
        self.ledger.observe(invocation)
