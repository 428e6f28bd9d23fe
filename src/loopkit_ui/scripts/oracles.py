"""The seven oracles: automatic checks after every step, independent of what the step checks.

1. ``process_ended``: the application's process ended.
2. ``not_responding``: the application did not answer an accessibility call within the call
   timeout (its UI thread is blocked; on Windows the same as a window not answering a message).
3. ``window_event``: a new window, reported by the event hook, even if it already closed again.
4. ``window_poll``: a new window found by comparing the window list (for when the hook fails).
5. ``error_label``: one of the configured error labels became visible (or changed its text).
6. ``app_log``: the application's log file has new error lines.
7. ``system_log``: the system log has new entries of the application.

A new window is read (its texts and buttons) and recognised as a crash dialog by its content,
never its title: an exception type, a stack-trace line, or both a continue and a quit button.
"""

from __future__ import annotations

import re
import signal
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from loopkit_ui.backends import (
    Locator,
    TreeNode,
    UIBackend,
    UIError,
    UITimeoutError,
    WindowInfo,
)
from loopkit_ui.scripts.app import AppProcess
from loopkit_ui.scripts.findings import Finding, crash_signs, exception_type, first_stack_line
from loopkit_ui.scripts.model import OracleConfig
from loopkit_ui.scripts.system_log import SystemLogSource
from loopkit_ui.scripts.window_events import WindowEvent, WindowEventSource

__all__ = ["OracleSuite", "WindowContent", "read_window", "window_content", "window_finding"]

_BUTTON_ROLES = frozenset({"push button", "button", "toggle button"})
_LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d[ T][\d:.,]+\s+(?:[A-Z]+\s+)?")


class WindowContent:
    """The texts and button names of one top-level window."""

    def __init__(self, key: str, title: str, texts: list[str], buttons: list[str]) -> None:
        self.key = key
        self.title = title
        self.texts = texts
        self.buttons = buttons


def read_window(backend: UIBackend, key: str) -> WindowContent | None:
    """Read the window whose tree key is ``key`` (None when it is gone)."""
    return window_content(backend.snapshot(node_budget=3000).nodes, key)


def window_content(nodes: Sequence[TreeNode], key: str) -> WindowContent | None:
    """The texts and buttons of the window ``key`` among a snapshot's ``nodes`` (None when it
    is not there). The tester's tools read a saved tree with it, as the oracles read a live one."""
    inside = {key}
    window = None
    texts: list[str] = []
    buttons: list[str] = []
    for node in nodes:  # pre-order: a parent comes before its children
        if node.key == key:
            window = node
        elif node.parent in inside:
            inside.add(node.key)
        else:
            continue
        for text in (node.name, node.text):
            if text and text not in texts:
                texts.append(text)
        if node.role in _BUTTON_ROLES and node.name:
            buttons.append(node.name)
    if window is None:
        return None
    return WindowContent(key, window.name, texts, buttons)


def window_finding(oracle: str, title: str, content: WindowContent | None, step: str) -> Finding:
    """The finding for a new window: ``crash_dialog`` when its content shows a crash (an
    exception type, a stack line, continue and quit buttons), else ``new_window``."""
    if content is None:
        return Finding(
            kind="new_window",
            oracle=oracle,
            severity="warning",
            title=title,
            summary=f"a new window {title!r} opened (closed again before it could be read)",
            step=step,
        )
    signs = crash_signs(content.texts, content.buttons)
    detail = "\n".join(content.texts) + (
        f"\nbuttons: {', '.join(content.buttons)}" if content.buttons else ""
    )
    if signs.is_crash:
        headline = next(
            (
                line
                for text in content.texts
                for line in text.splitlines()
                if signs.exception_type and signs.exception_type in line
            ),
            "",
        )
        return Finding(
            kind="crash_dialog",
            oracle=oracle,
            severity="error",
            title=content.title,
            summary=f"crash dialog {content.title!r}: {headline or ', '.join(signs.reasons())}",
            detail=f"recognised by: {', '.join(signs.reasons())}\n{detail}",
            stack_line=signs.stack_line,
            step=step,
        )
    return Finding(
        kind="new_window",
        oracle=oracle,
        severity="warning",
        title=content.title,
        summary=f"a new window {content.title!r} opened",
        detail=detail,
        step=step,
    )


Signature = tuple[str, str | None, str]


def _signature(window: WindowInfo) -> Signature:
    return window.title, window.id, window.role


def _strip_log_prefix(line: str) -> str:
    return _LOG_PREFIX.sub("", line).strip()


class OracleSuite:
    """Runs the enabled oracles after each step and keeps what they need between steps."""

    def __init__(
        self,
        config: OracleConfig,
        *,
        log_file: Path | None = None,
        window_events: WindowEventSource | None = None,
        system_log: SystemLogSource | None = None,
        ident: str = "",
    ) -> None:
        self.config = config
        self.enabled = set(config.enabled)
        self.log_file = log_file
        self.window_events = window_events
        self.system_log = system_log
        self.ident = ident
        self.notes: list[str] = []
        self._error_pattern = re.compile(config.log_error_pattern)
        self._app: AppProcess | None = None
        self._exit_reported = False
        self._hung = False
        self._known: set[str] = set()
        self._windows: Counter[Signature] = Counter()
        self._labels: dict[str, str] = {}
        self._log_offset = 0
        self._system_log_started = False
        if "window_event" in self.enabled and window_events is None:
            self.notes.append("window_event: no event hook on this platform; polling only")
        if "system_log" in self.enabled and system_log is None:
            self.notes.append("system_log: no system log found (no journal, no syslog file)")
        if "app_log" in self.enabled and log_file is None:
            self.notes.append("app_log: the script names no log_file")

    # -- baseline ------------------------------------------------------------------------

    def attach(self, app: AppProcess) -> None:
        """Take the baseline for a (re)started app: its windows, log position, labels."""
        self._app = app
        self._exit_reported = False
        self._hung = False
        backend = app.backend
        if backend is not None:
            nodes = backend.snapshot(node_budget=3000).nodes
            self._known |= {n.key for n in nodes if n.depth == 1}
            self._windows = Counter(_signature(w) for w in backend.list_windows())
        if self.window_events is not None and app.pid is not None:
            try:
                self.window_events.start(app.pid)
            except (OSError, UIError) as error:
                self.notes.append(f"window_event: the event hook failed ({error}); polling only")
                self.window_events = None
        if self.log_file is not None and not self._log_offset and self.log_file.exists():
            self._log_offset = self.log_file.stat().st_size
        if self.system_log is not None and app.pid is not None:
            if self._system_log_started:
                self.system_log.add_pid(app.pid)
            else:
                self.system_log.start(self.ident, [app.pid])
                self._system_log_started = True

    # -- the check after a step ----------------------------------------------------------

    def check(self, step: str) -> list[Finding]:
        """Run every enabled oracle; returns what they found after step ``step``."""
        app = self._app
        findings: list[Finding] = []
        status = app.poll() if app is not None else None
        if status is not None and not self._exit_reported and "process_ended" in self.enabled:
            findings.append(self._process_ended(status, step))
            self._exit_reported = True
        backend = app.backend if app is not None and status is None else None
        windows: list[WindowInfo] | None = None
        if backend is not None:
            try:
                windows = backend.list_windows()
                self._hung = False
            except UITimeoutError as error:
                if "not_responding" in self.enabled and not self._hung:
                    findings.append(
                        Finding(
                            kind="not_responding",
                            oracle="not_responding",
                            title=self.ident or "application",
                            summary=f"the application did not answer within "
                            f"{app.config.call_timeout if app else '?'} s",
                            detail=str(error),
                            step=step,
                        )
                    )
                self._hung = True
                backend = None
            except UIError:
                backend = None
                findings += self._gone(step)
        events = self.window_events.drain() if self.window_events is not None else []
        try:
            if windows is not None:
                now = Counter(_signature(w) for w in windows)
                before, self._windows = self._windows, now
                if backend is not None:
                    findings += self._new_windows(backend, events, before, now, step)
            if backend is not None and "error_label" in self.enabled:
                findings += self._error_labels(backend, step)
        except UITimeoutError:
            pass  # the next check's probe reports a hang
        except UIError:
            findings += self._gone(step)
        if "app_log" in self.enabled:
            findings += self._app_log(step)
        if "system_log" in self.enabled:
            findings += self._system_log(step)
        return findings

    def _gone(self, step: str) -> list[Finding]:
        """The app left the bus (or its objects vanished): it is probably exiting. Give it a
        moment, so process_ended is reported after this step and not the next."""
        app = self._app
        status = app.wait(2.0) if app is not None else None
        if status is None or self._exit_reported:
            return []
        self._exit_reported = True
        return [self._process_ended(status, step)] if "process_ended" in self.enabled else []

    def final_check(self, step: str = "(after close)") -> list[Finding]:
        """After the app closed: only the logs (an error written while shutting down)."""
        found: list[Finding] = []
        if "app_log" in self.enabled:
            found += self._app_log(step)
        if "system_log" in self.enabled:
            found += self._system_log(step)
        return found

    def close(self) -> None:
        """Release the event hook."""
        if self.window_events is not None:
            self.window_events.close()

    # -- the oracles ---------------------------------------------------------------------

    def _process_ended(self, status: int, step: str) -> Finding:
        if status < 0:
            try:
                how = f"killed by {signal.Signals(-status).name}"
            except ValueError:
                how = f"killed by signal {-status}"
        else:
            how = f"exit status {status}"
        return Finding(
            kind="process_ended",
            oracle="process_ended",
            title=how,
            summary=f"the application's process ended ({how})",
            step=step,
        )

    def _new_windows(
        self,
        backend: UIBackend,
        events: list[WindowEvent],
        before: Counter[Signature],
        now: Counter[Signature],
        step: str,
    ) -> list[Finding]:
        """The window oracles. A window is new when its kind (title, id, role) is more
        numerous than at the last check, or when the hook saw a window that is gone again.
        Keys alone do not tell: Qt may give an existing window a new accessible object."""
        appeared = now - before
        fresh = [e for e in events if e.key not in self._known]
        tops: dict[str, Signature] = {}
        if (fresh and "window_event" in self.enabled) or (
            appeared and "window_poll" in self.enabled
        ):
            tops = {
                n.key: (n.name, n.id, n.role)
                for n in backend.snapshot(node_budget=3000).nodes
                if n.depth == 1
            }
        found: list[Finding] = []
        budget = Counter(appeared)
        if "window_event" in self.enabled:
            for event in fresh:
                if event.key in self._known:
                    continue  # two events for one window
                self._known.add(event.key)
                if event.key not in tops:
                    found.append(window_finding("window_event", event.title, None, step))
                elif budget[tops[event.key]] > 0:
                    budget[tops[event.key]] -= 1
                    content = read_window(backend, event.key)
                    found.append(window_finding("window_event", event.title, content, step))
        if "window_poll" in self.enabled:
            for signature, missing in (+budget).items():
                keys = [k for k, sig in tops.items() if sig == signature]
                unseen = [k for k in keys if k not in self._known] or keys
                for key in unseen[-missing:] if unseen else []:
                    self._known.add(key)
                    content = read_window(backend, key)
                    found.append(window_finding("window_poll", signature[0], content, step))
                if not keys:
                    found.append(window_finding("window_poll", signature[0], None, step))
        self._known |= set(tops)
        return found

    def _error_labels(self, backend: UIBackend, step: str) -> list[Finding]:
        found = []
        for ident in self.config.error_labels:
            try:
                info = backend.get_element(Locator(target=ident))
            except UIError:
                self._labels.pop(ident, None)
                continue
            text = (info.text or info.name or "").strip()
            if not info.visible or not text:
                self._labels.pop(ident, None)
                continue
            if self._labels.get(ident) != text:
                found.append(
                    Finding(
                        kind="error_label",
                        oracle="error_label",
                        title=text,
                        summary=f"error label {ident} shows {text!r}",
                        step=step,
                    )
                )
            self._labels[ident] = text
        return found

    def _app_log(self, step: str) -> list[Finding]:
        if self.log_file is None or not self.log_file.exists():
            return []
        with self.log_file.open("rb") as handle:
            handle.seek(self._log_offset)
            data = handle.read()
        # Only complete lines; a half-written one is read next time.
        cut = data.rfind(b"\n") + 1
        self._log_offset += cut
        lines = data[:cut].decode("utf-8", errors="replace").splitlines()
        errors = [line for line in lines if self._error_pattern.search(line)]
        if not errors:
            return []
        messages = [_strip_log_prefix(line) for line in errors]
        kind = exception_type(messages)
        return [
            Finding(
                kind="app_log_error",
                oracle="app_log",
                title=kind or messages[0],
                summary=f"{len(errors)} new error line(s) in the app log: {messages[0]}",
                detail="\n".join(errors[:60]),
                stack_line=first_stack_line(messages),
                step=step,
            )
        ]

    def _system_log(self, step: str) -> list[Finding]:
        if self.system_log is None or not self._system_log_started:
            return []
        entries = self.system_log.read_new()
        if not entries:
            return []
        messages = [entry.message for entry in entries]
        kind = exception_type(messages)
        first = messages[0].splitlines()[0] if messages[0] else ""
        return [
            Finding(
                kind="system_log_entry",
                oracle="system_log",
                title=kind or first,
                summary=f"{len(entries)} new system-log entr{'y' if len(entries) == 1 else 'ies'}"
                f" of {entries[0].ident}: {first}",
                detail="\n".join(f"{e.time} {e.ident}[{e.pid}]: {e.message}" for e in entries[:30]),
                stack_line=first_stack_line(messages),
                step=step,
            )
        ]
