"""The environment of a child process: an allowlist of what programs need, never a secret.

A build, the app, tests, git and MCP servers get :func:`child_environment`, not a copy of
``os.environ``: the model provider's key and every other variable whose name looks secret
(:func:`loopkit.redaction.is_secret_name`) stay in the runner. What is kept:

- the basics: ``PATH``, ``HOME``, ``USER``, ``LOGNAME``, ``SHELL``, ``TERM``, ``TZ``, the temp
  folder (``TMPDIR``, ``TEMP``, ``TMP``);
- the locale: ``LANG``, ``LANGUAGE``, ``LC_*``;
- the desktop: ``DISPLAY``, ``XAUTHORITY``, ``WAYLAND_DISPLAY``, ``XDG_*``, the D-Bus
  addresses (``DBUS_SESSION_BUS_ADDRESS``, ``DBUS_SYSTEM_BUS_ADDRESS``), accessibility
  (``AT_SPI_BUS_ADDRESS``, ``NO_AT_BRIDGE``, ``GTK_A11Y``) and Qt (``QT_*``);
- Python: ``PYTHONPATH``, ``PYTHONHOME``, ``PYTHONUTF8``, ``PYTHONIOENCODING``,
  ``PYTHONDONTWRITEBYTECODE``, ``PYTHONUNBUFFERED``, ``PYTHONNOUSERSITE``, ``VIRTUAL_ENV``;
- Windows: ``SYSTEMROOT``, ``SYSTEMDRIVE``, ``WINDIR``, ``COMSPEC``, ``PATHEXT``, ``USERPROFILE``,
  ``USERNAME``, ``HOMEDRIVE``, ``HOMEPATH``, ``APPDATA``, ``LOCALAPPDATA``, ``PROGRAMDATA``,
  ``NUMBER_OF_PROCESSORS``, ``PROCESSOR_ARCHITECTURE``;
- loopkit's own settings: ``LOOPKIT_*``, but for :data:`NOT_INHERITED` (``LOOPKIT_DATABASE_URL``,
  whose URL may hold the database's credentials); the processes that open the durable database
  read it from their own environment, and a child gets it only when passed through by name.

An application's own variables come through ``passthrough``: names or glob patterns
(``INVOICE_APP_*``). Even then a variable whose name looks secret is kept only when the
passthrough names it exactly (``MY_SERVICE_TOKEN``, not ``MY_*``), and values given explicitly
(``extra``: a configuration's ``build_env``/``app_env``) are always set: a secret reaches a child
only when the configuration says so by name.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Iterable, Mapping

from loopkit.redaction import is_secret_name

__all__ = [
    "BASE_NAMES",
    "BASE_PREFIXES",
    "NOT_INHERITED",
    "check_passthrough",
    "child_environment",
]

BASE_NAMES = frozenset(
    {
        # basics
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TZ", "TMPDIR", "TEMP", "TMP",
        # locale
        "LANG", "LANGUAGE",
        # desktop, D-Bus, accessibility
        "DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS",
        "DBUS_SYSTEM_BUS_ADDRESS", "AT_SPI_BUS_ADDRESS", "NO_AT_BRIDGE", "GTK_A11Y",
        # Python
        "PYTHONPATH", "PYTHONHOME", "PYTHONUTF8", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED", "PYTHONNOUSERSITE", "VIRTUAL_ENV",
        # Windows
        "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE", "USERNAME",
        "HOMEDRIVE", "HOMEPATH", "APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "NUMBER_OF_PROCESSORS",
        "PROCESSOR_ARCHITECTURE",
    }
)  # fmt: skip
"""Variables every child gets (when set), unless the name looks secret."""

BASE_PREFIXES = ("LC_", "XDG_", "QT_", "LOOPKIT_")
"""Prefixes of further variables every child gets (when set), unless the name looks secret."""

NOT_INHERITED = frozenset({"LOOPKIT_DATABASE_URL"})
"""Names the allowlist would keep but that hold a credential: passed only when named exactly."""

_GLOB_CHARS = frozenset("*?[")
_WINDOWS = sys.platform == "win32"


def check_passthrough(entries: Iterable[str]) -> list[str]:
    """``entries`` as a list, or a ``ValueError`` naming the entry that is not a variable name
    or glob pattern (empty, or holding ``=``, whitespace or NUL)."""
    result = []
    for entry in entries:
        if (
            not isinstance(entry, str)
            or not entry
            or any(c in entry for c in "=\x00")
            or entry != entry.strip()
            or any(c.isspace() for c in entry)
        ):
            raise ValueError(
                f"env passthrough entry {entry!r}: expected a variable name such as "
                "'INVOICE_APP_LOG' or a glob pattern such as 'INVOICE_APP_*'"
            )
        result.append(entry)
    return result


def child_environment(
    passthrough: Iterable[str] = (),
    *,
    extra: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    allowlist: bool = True,
) -> dict[str, str]:
    """The environment for a child process, built from ``environ`` (default ``os.environ``).

    Keeps the allowlist (:data:`BASE_NAMES`, :data:`BASE_PREFIXES`; left out with
    ``allowlist=False``) and the variables matching ``passthrough`` (names or ``fnmatch``
    patterns), never a secret-looking name nor one of :data:`NOT_INHERITED` unless
    ``passthrough`` names it exactly; then sets ``extra`` as given.
    """
    env = os.environ if environ is None else environ
    entries = check_passthrough(passthrough)
    exact = {_norm(e) for e in entries if _GLOB_CHARS.isdisjoint(e)}
    globs = [_norm(e) for e in entries if not _GLOB_CHARS.isdisjoint(e)]
    child: dict[str, str] = {}
    for name, value in env.items():
        key = _norm(name)
        if key in exact:
            child[name] = value
        elif is_secret_name(name) or key in NOT_INHERITED:
            continue
        elif (allowlist and (key in BASE_NAMES or key.startswith(BASE_PREFIXES))) or any(
            fnmatch.fnmatchcase(key, g) for g in globs
        ):
            child[name] = value
    if extra:
        child.update(extra)
    return child


def _norm(name: str) -> str:
    # Windows variable names are case-insensitive (os.environ upper-cases them).
    return name.upper() if _WINDOWS else name
