"""AT-SPI numbers and names: roles, states, D-Bus names, synthesized-input codes.

The role and state tables are the AtspiRole / AtspiStateType enums of at-spi2-core 2.46, in order
(the D-Bus protocol sends the numbers).
"""

from __future__ import annotations

__all__ = [
    "ROLES",
    "STATES",
    "role_name",
    "state_names",
]

ROLES: tuple[str, ...] = (
    "invalid",
    "accelerator label",
    "alert",
    "animation",
    "arrow",
    "calendar",
    "canvas",
    "check box",
    "check menu item",
    "color chooser",
    "column header",
    "combo box",
    "date editor",
    "desktop icon",
    "desktop frame",
    "dial",
    "dialog",
    "directory pane",
    "drawing area",
    "file chooser",
    "filler",
    "focus traversable",
    "font chooser",
    "frame",
    "glass pane",
    "html container",
    "icon",
    "image",
    "internal frame",
    "label",
    "layered pane",
    "list",
    "list item",
    "menu",
    "menu bar",
    "menu item",
    "option pane",
    "page tab",
    "page tab list",
    "panel",
    "password text",
    "popup menu",
    "progress bar",
    "push button",
    "radio button",
    "radio menu item",
    "root pane",
    "row header",
    "scroll bar",
    "scroll pane",
    "separator",
    "slider",
    "spin button",
    "split pane",
    "status bar",
    "table",
    "table cell",
    "table column header",
    "table row header",
    "tearoff menu item",
    "terminal",
    "text",
    "toggle button",
    "tool bar",
    "tool tip",
    "tree",
    "tree table",
    "unknown",
    "viewport",
    "window",
    "extended",
    "header",
    "footer",
    "paragraph",
    "ruler",
    "application",
    "autocomplete",
    "editbar",
    "embedded",
    "entry",
    "chart",
    "caption",
    "document frame",
    "heading",
    "page",
    "section",
    "redundant object",
    "form",
    "link",
    "input method window",
    "table row",
    "tree item",
    "document spreadsheet",
    "document presentation",
    "document text",
    "document web",
    "document email",
    "comment",
    "list box",
    "grouping",
    "image map",
    "notification",
    "info bar",
    "level bar",
    "title bar",
    "block quote",
    "audio",
    "video",
    "definition",
    "article",
    "landmark",
    "log",
    "marquee",
    "math",
    "rating",
    "timer",
    "static",
    "math fraction",
    "math root",
    "subscript",
    "superscript",
    "description list",
    "description term",
    "description value",
    "footnote",
    "content deletion",
    "content insertion",
    "mark",
    "suggestion",
    "push button menu",
    "last defined",
)

STATES: tuple[str, ...] = (
    "invalid",
    "active",
    "armed",
    "busy",
    "checked",
    "collapsed",
    "defunct",
    "editable",
    "enabled",
    "expandable",
    "expanded",
    "focusable",
    "focused",
    "has-tooltip",
    "horizontal",
    "iconified",
    "modal",
    "multi-line",
    "multiselectable",
    "opaque",
    "pressed",
    "resizable",
    "selectable",
    "selected",
    "sensitive",
    "showing",
    "single-line",
    "stale",
    "transient",
    "vertical",
    "visible",
    "manages-descendants",
    "indeterminate",
    "required",
    "truncated",
    "animated",
    "invalid-entry",
    "supports-autocompletion",
    "selectable-text",
    "is-default",
    "visited",
    "checkable",
    "has-popup",
    "read-only",
    "last-defined",
)

# D-Bus names
REGISTRY = "org.a11y.atspi.Registry"
REGISTRY_ROOT = "/org/a11y/atspi/accessible/root"
REGISTRY_PATH = "/org/a11y/atspi/registry"
DEC_PATH = "/org/a11y/atspi/registry/deviceeventcontroller"
DEC = "org.a11y.atspi.DeviceEventController"
ACCESSIBLE = "org.a11y.atspi.Accessible"
ACTION = "org.a11y.atspi.Action"
APPLICATION = "org.a11y.atspi.Application"
COLLECTION = "org.a11y.atspi.Collection"
COMPONENT = "org.a11y.atspi.Component"
EDITABLE_TEXT = "org.a11y.atspi.EditableText"
SELECTION = "org.a11y.atspi.Selection"
TABLE = "org.a11y.atspi.Table"
TEXT = "org.a11y.atspi.Text"
VALUE = "org.a11y.atspi.Value"
PROPERTIES = "org.freedesktop.DBus.Properties"
EVENT_PREFIX = "org.a11y.atspi.Event."

# Collection.GetMatches rule matching everything: (states, ALL, attributes, ALL, roles, ALL,
# interfaces, ALL, invert=False); then sortby=CANONICAL, count, traverse=True. The state set is
# two 32-bit words (Qt warns about any other size).
MATCH_ALL_RULE: tuple[object, ...] = ([0, 0], 1, {}, 1, [], 1, [], 1, False)
MATCH_SIGNATURE = "(aiia{ss}iaiiasib)uib"

COORD_SCREEN = 0

# AtspiKeySynthType
KEY_PRESS, KEY_RELEASE, KEY_PRESSRELEASE, KEY_SYM, KEY_STRING = 0, 1, 2, 3, 4
KEY_LOCKMODIFIERS, KEY_UNLOCKMODIFIERS = 5, 6

_STATE_INDEX = {name: index for index, name in enumerate(STATES)}
_ROLE_INDEX = {name: index for index, name in enumerate(ROLES)}


def role_name(number: int) -> str:
    """The AT-SPI role name of a role number (``"unknown"`` when out of range)."""
    return ROLES[number] if 0 <= number < len(ROLES) else "unknown"


def role_number(name: str) -> int:
    """The role number of an AT-SPI role name."""
    return _ROLE_INDEX[name]


def state_names(words: list[int]) -> frozenset[str]:
    """Decode an AT-SPI state set (two 32-bit words) into state names."""
    names = set()
    for word_index, word in enumerate(words):
        base = 32 * word_index
        while word:
            low = word & -word
            bit = low.bit_length() - 1
            if base + bit < len(STATES):
                names.add(STATES[base + bit])
            word ^= low
    return frozenset(names)


def state_bit(name: str) -> int:
    """The index of a state name (for Collection rules)."""
    return _STATE_INDEX[name]
