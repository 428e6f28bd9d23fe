"""The eval's live line: cases done, running, queued and being graded, the pass rate so far and
the spend so far (redrawn in a terminal, printed when it changes otherwise)."""

from __future__ import annotations

import time

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.text import Text

from loopkit.evals.results import CaseResult, EvalResult, PassRate

__all__ = ["EvalProgress", "progress_text"]


def progress_text(result: EvalResult, counts: dict[str, int]) -> str:
    """``12/36 done · 2 running · 21 queued · 1 grading · passed 10/12 (83%) · spent $0.00``."""
    rate = PassRate.of(result.cases)
    passed = f"passed {rate.passed}/{rate.total}" + (f" ({rate.rate:.0%})" if rate.total else "")
    spend = f"spent ${result.spend:.4f}"
    if result.max_cost is not None:
        spend += f" of ${result.max_cost:.2f}"
    if all(c.price.note == "scripted" for c in result.configs):
        spend += " (scripted)"
    return (
        f"{counts.get('done', 0)}/{len(result.cases)} done · {counts.get('running', 0)} running · "
        f"{counts.get('queued', 0)} queued · {counts.get('grading', 0)} grading · {passed} · "
        f"{spend}"
    )


class EvalProgress:
    """Use as a context manager; pass :meth:`update` and :meth:`case_ended` to the eval."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.started = time.monotonic()
        self.text = "starting"
        self._printed = ""
        self._live: Live | None = None
        if console.is_terminal:
            self._live = Live(self._render(), console=console, refresh_per_second=4,
                              transient=True)  # fmt: skip

    def _render(self) -> Text:
        seconds = int(time.monotonic() - self.started)
        return Text.assemble(("● ", "cyan"), self.text, (f"  {seconds // 60}m{seconds % 60:02d}s",
                                                         "dim"))  # fmt: skip

    def __enter__(self) -> EvalProgress:
        if self._live is not None:
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)

    def update(self, result: EvalResult, counts: dict[str, int]) -> None:
        self.text = progress_text(result, counts)
        if self._live is not None:
            self._live.update(self._render())
        elif self.text != self._printed:
            self._printed = self.text
            self.console.print(self.text, markup=False, highlight=False, soft_wrap=True)

    def case_ended(self, case: CaseResult) -> None:
        failed = ", ".join(f"{g.grader}: {g.detail}" for g in case.failed_graders())
        mark = "[green]passed[/green]" if case.passed else "[red]failed[/red]"
        self.console.print(
            f"{mark} {escape(case.key)}  ({case.rounds} rounds, {case.seconds:.1f} s)"
            + (f"  {escape(failed)}" if failed else ""),
            highlight=False,
            soft_wrap=True,
        )
