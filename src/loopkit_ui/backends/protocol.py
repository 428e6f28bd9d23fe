"""The UI backend protocol, the data it returns, and its errors.

One protocol, two implementations (AT-SPI on Linux, UI Automation on Windows), one conformance
suite. Everything crossing the boundary is a small pydantic model so the MCP server can serialize
it and the script runner can use it unchanged.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from loopkit.abstractions import ToolError

__all__ = [
    "ActionResult",
    "AmbiguousElementError",
    "AppInfo",
    "AppNotFoundError",
    "ElementDisabledError",
    "ElementInfo",
    "ElementNotFoundError",
    "ElementVanishedError",
    "Expectation",
    "Locator",
    "ScrollDirection",
    "StaleRefError",
    "TreeDiff",
    "TreeNode",
    "TreeSnapshot",
    "UIBackend",
    "UIError",
    "UITimeoutError",
    "WaitResult",
    "WindowAction",
    "WindowInfo",
    "WindowKind",
    "WindowReport",
    "nearest",
]

MouseButton = Literal["left", "right", "middle"]
ClickMethod = Literal["auto", "input", "action"]
WaitCondition = Literal["appear", "disappear", "value", "text", "enabled", "disabled", "visible"]
#: What a top-level window is: a window, a dialog, a menu (context or drop-down menu), another
#: popup (e.g. a combo box's drop-down list) or a tooltip.
WindowKind = Literal["window", "dialog", "menu", "popup", "tooltip"]
#: Where ``scroll`` turns the wheel.
ScrollDirection = Literal["up", "down", "left", "right"]
#: What ``window_action`` does to a top-level window.
WindowAction = Literal["focus", "move", "resize", "minimize", "maximize", "restore", "close"]


# -- errors ------------------------------------------------------------------------------------


class UIError(ToolError):
    """A UI call failed in a way the caller (often a model) should read and can act on."""


class AppNotFoundError(UIError):
    """The application to drive is not running (or exposes no accessibility tree)."""


class ElementNotFoundError(UIError):
    """No element matches the locator; the message lists the nearest ids that exist."""

    def __init__(self, message: str, *, suggestions: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.suggestions = list(suggestions)


class AmbiguousElementError(UIError):
    """More than one element matches; the message lists the candidates."""

    def __init__(self, message: str, *, candidates: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.candidates = list(candidates)


class StaleRefError(ElementNotFoundError):
    """A ref from an earlier snapshot names an element that is gone (it disappeared, or its
    window closed): take a new snapshot for current refs."""


class ElementDisabledError(UIError):
    """The element exists but is disabled, so it cannot be acted on."""


class ElementVanishedError(UIError):
    """The element disappeared between lookup and use (e.g. its window closed)."""


class UITimeoutError(UIError):
    """The application did not answer, or a condition did not come true, in time."""


def nearest(wanted: str, existing: Iterable[str], limit: int = 5) -> list[str]:
    """The ids in ``existing`` closest to ``wanted`` (for 'did you mean' messages)."""
    pool = sorted({item for item in existing if item})
    close = difflib.get_close_matches(wanted, pool, n=limit, cutoff=0.5)
    if len(close) < limit:
        lowered = wanted.lower()
        close += [item for item in pool if lowered in item.lower() and item not in close]
    return close[:limit]


# -- data --------------------------------------------------------------------------------------


class Locator(BaseModel):
    """Which element: an id (tried first) or a name; ``row``/``column`` make it a table cell of
    the table ``target``; ``window`` restricts the search to one top-level window."""

    target: str = Field(min_length=1)
    row: int | None = Field(default=None, ge=0)
    column: int | None = Field(default=None, ge=0)
    window: str | None = None
    key: str | None = Field(
        default=None,
        description="the backend's own key of the element (from a snapshot ref): when set, the "
        "element is this one (or gone), whatever target says; target is then the ref, for messages",
    )

    def describe(self) -> str:
        """A short human description for messages, e.g. ``ItemsTable[1, 2]``."""
        text = f"ref {self.target}" if self.key is not None else self.target
        if self.row is not None or self.column is not None:
            text += f"[{self.row}, {self.column}]"
        if self.window:
            text += f" in window {self.window!r}"
        return text


class AppInfo(BaseModel):
    """The application a backend is attached to."""

    name: str
    pid: int | None = None
    toolkit: str | None = None


class ElementInfo(BaseModel):
    """One element as read live from the accessibility tree."""

    id: str | None = Field(default=None, description="accessible id / AutomationId")
    name: str = ""
    role: str = ""
    states: list[str] = Field(default_factory=list)
    text: str | None = Field(default=None, description="text content, else the name")
    value: str | None = None
    bounds: tuple[int, int, int, int] | None = Field(default=None, description="x, y, w, h")
    child_count: int = 0
    enabled: bool = True
    visible: bool = True
    focused: bool = False
    row: int | None = None
    column: int | None = None
    window: str | None = Field(default=None, description="title of its top-level window")

    def label(self) -> str:
        """``role 'name' #id`` for messages and diffs."""
        text = f"{self.role} {self.name!r}"
        return f"{text} #{self.id}" if self.id else text


class WindowInfo(BaseModel):
    """A top-level window of the application: dialogs, menus, popups and tooltips included."""

    title: str
    id: str | None = None
    role: str = ""
    kind: WindowKind = Field(
        default="window",
        description="window, dialog, menu (a context or drop-down menu), popup (e.g. a combo "
        "box's drop-down list) or tooltip",
    )
    is_dialog: bool = False
    modal: bool = False
    active: bool = False
    bounds: tuple[int, int, int, int] | None = None
    minimized: bool = Field(default=False, description="minimised (not shown on screen)")
    app: str | None = Field(
        default=None, description="for a window of another application: that application's name"
    )

    def label(self) -> str:
        """How action reports name it: ``title #id`` (untitled: ``role #id``); a menu, popup or
        tooltip by its kind first, e.g. ``menu 'Item actions' #ItemsContextMenu``."""
        if self.kind in ("window", "dialog"):
            text = self.title or self.role or self.kind
        else:
            text = self.kind + (f" {self.title!r}" if self.title else "")
        text += f" #{self.id}" if self.id else ""
        return text + (f" (app {self.app!r})" if self.app else "")


class WindowReport(BaseModel):
    """Top-level windows after an action, and which opened or closed during it."""

    count: int
    opened: list[str] = Field(default_factory=list)
    closed: list[str] = Field(default_factory=list)


class TreeDiff(BaseModel):
    """What an action changed in the tree (at most ``limit`` entries of each kind)."""

    appeared: list[str] = Field(default_factory=list)
    disappeared: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    truncated: bool = False


class ActionResult(BaseModel):
    """The answer to every action."""

    success: bool
    id: str
    action: str
    ms: float
    effect: str = Field(description="how the effect was confirmed, or that none was observed")
    active_dialog: str | None = None
    windows: WindowReport
    diff: TreeDiff | None = None
    detail: str | None = None


class Expectation(BaseModel):
    """What an action must cause; without it an action waits for the UI to settle."""

    appear: list[str] = Field(default_factory=list, description="ids/names that must appear")
    disappear: list[str] = Field(default_factory=list, description="ids/names that must go")
    timeout: float = Field(default=3.0, gt=0, le=60)


class WaitResult(BaseModel):
    """The answer to wait_for."""

    success: bool
    id: str
    condition: str
    ms: float
    actual: str | None = None


class TreeNode(BaseModel):
    """One node of a tree snapshot (pre-order; ``parent`` is the key of its parent)."""

    key: str
    parent: str | None
    depth: int
    role: str
    name: str = ""
    id: str | None = None
    states: list[str] = Field(default_factory=list)
    text: str | None = None

    def label(self) -> str:
        """``role 'name' #id`` for messages and diffs."""
        text = f"{self.role} {self.name!r}"
        return f"{text} #{self.id}" if self.id else text


class TreeSnapshot(BaseModel):
    """A bulk read of an application's tree, cut at ``node_budget`` nodes."""

    app: str
    nodes: list[TreeNode]
    truncated: bool = False
    node_budget: int
    ms: float


# -- the protocol ------------------------------------------------------------------------------


@runtime_checkable
class UIBackend(Protocol):
    """What the MCP server and the script runner need from a UI automation backend.

    Every method is synchronous, bounded by timeouts, and raises :class:`UIError` subclasses
    with messages meant for the caller. Implementations decide their own threading.
    """

    name: str

    def attach(self) -> AppInfo:
        """Find the configured application (raises AppNotFoundError)."""
        ...

    def close(self) -> None:
        """Release connections and threads."""
        ...

    def list_windows(self) -> list[WindowInfo]:
        """The application's top-level windows, dialogs included."""
        ...

    def list_applications(self) -> list[AppInfo]:
        """Every accessible application on the desktop (this one included)."""
        ...

    def other_windows(self) -> list[WindowInfo]:
        """The top-level windows of the desktop's other applications (a file chooser or a crash
        reporter of another process), each with its ``app``."""
        ...

    def get_element(self, locator: Locator) -> ElementInfo:
        """Read one element live."""
        ...

    def get_property(self, locator: Locator, name: str) -> str | None:
        """One property by name (an ElementInfo field, or a toolkit attribute)."""
        ...

    def snapshot(self, *, window: str | None = None, node_budget: int = 2000) -> TreeSnapshot:
        """The tree of the application (or one window), in one bulk read."""
        ...

    def click(
        self,
        locator: Locator,
        *,
        button: MouseButton = "left",
        count: int = 1,
        method: ClickMethod = "auto",
        expect: Expectation | None = None,
        diff: bool = False,
    ) -> ActionResult:
        """Click (count=2: double-click) and wait for the effect."""
        ...

    def hover(self, locator: Locator) -> ActionResult:
        """Move the pointer over the element."""
        ...

    def type_text(
        self,
        locator: Locator,
        text: str,
        *,
        clear: bool = True,
        diff: bool = False,
        cancel: threading.Event | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> ActionResult:
        """Focus the element and type ``text`` (replacing the content when ``clear``), in
        chunks the app keeps up with; stop between chunks once ``cancel`` is set; tell
        ``progress(typed, total)`` after each chunk."""
        ...

    def press_keys(
        self, keys: str, *, locator: Locator | None = None, diff: bool = False
    ) -> ActionResult:
        """Press a key combination such as ``ctrl+s``, ``Enter`` or ``shift+Tab``."""
        ...

    def select_item(self, locator: Locator, item: str, *, diff: bool = False) -> ActionResult:
        """Select the child ``item`` (name or index) of a list, combo box or tab list."""
        ...

    def drag_and_drop(
        self, source: Locator, target: Locator, *, diff: bool = False
    ) -> ActionResult:
        """Press on ``source``, move to ``target``, release."""
        ...

    def set_cell(self, locator: Locator, text: str, *, diff: bool = False) -> ActionResult:
        """Edit a table cell (locator with row and column) like a user: open, type, Enter."""
        ...

    def wait_for(
        self,
        locator: Locator,
        condition: WaitCondition,
        *,
        value: str | None = None,
        timeout: float = 5.0,
    ) -> WaitResult:
        """Wait until the condition holds (event-driven, bounded by ``timeout``)."""
        ...

    def screenshot(
        self, path: str, *, locator: Locator | None = None, window: str | None = None
    ) -> str:
        """Save a PNG of the screen, of one element, or of one top-level window (id or
        title); returns the path. The whole screen must work without the application."""
        ...

    # -- beyond the element tree: text, pointer, scrolling, windows, clipboard ------------------

    def set_text(self, locator: Locator, text: str, *, diff: bool = False) -> ActionResult:
        """Replace a text field's content at once through the accessibility API (no keystrokes;
        for long texts), then read it back."""
        ...

    def element_at(self, x: int, y: int) -> ElementInfo | None:
        """The deepest element of the application at the screen point ``(x, y)``, or None."""
        ...

    def click_at(
        self, x: int, y: int, *, button: MouseButton = "left", count: int = 1, diff: bool = False
    ) -> ActionResult:
        """Click at the screen point ``(x, y)`` (inside one of the app's windows) and wait for
        the effect; the answer names the element found there."""
        ...

    def drag_at(self, x: int, y: int, to_x: int, to_y: int, *, diff: bool = False) -> ActionResult:
        """Press at ``(x, y)``, move to ``(to_x, to_y)``, release (screen points inside the
        app's windows)."""
        ...

    def scroll(
        self,
        locator: Locator,
        *,
        direction: ScrollDirection = "down",
        amount: int = 3,
        diff: bool = False,
    ) -> ActionResult:
        """Turn the mouse wheel ``amount`` notches over the element."""
        ...

    def scroll_into_view(self, locator: Locator) -> ActionResult:
        """Scroll the element's scrollable ancestor until the element shows."""
        ...

    def window_action(
        self,
        window: str | None,
        action: WindowAction,
        *,
        x: int | None = None,
        y: int | None = None,
        width: int | None = None,
        height: int | None = None,
    ) -> ActionResult:
        """Focus, move, resize, minimise, maximise, restore or close a top-level window of the
        application (``window``: id or title; None: the active one, else the first)."""
        ...

    def get_clipboard(self) -> str:
        """The clipboard's text ("" when it holds none)."""
        ...

    def set_clipboard(self, text: str) -> None:
        """Put ``text`` on the clipboard."""
        ...
