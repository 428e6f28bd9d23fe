"""Importing DBOS, the engine behind durable runs (the ``durable`` extra): the module, or a
:class:`~loopkit.durable.errors.DurableError` that says how to install it.

Both the runtime (which starts DBOS) and the workflows (registered with it at import) need it,
so it lives here, below both.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from loopkit.durable.errors import DurableError

__all__ = ["INSTALL_HINT", "check_dbos_installed", "require_dbos"]

#: How to install what durable runs need.
INSTALL_HINT = "pip install 'loopkit[durable]'"


def check_dbos_installed() -> None:
    """A :class:`DurableError` that says how to install DBOS when it is not installed; nothing
    is imported (``import dbos`` takes most of a second: a caller can do it while it waits for
    something else)."""
    if importlib.util.find_spec("dbos") is None:
        raise DurableError(
            "durable runs need DBOS, which is not installed; install the durable extra: "
            f"{INSTALL_HINT}"
        )


def require_dbos() -> Any:
    """The ``dbos`` module, or a :class:`DurableError` that says how to install it."""
    try:
        import dbos
    except ImportError as e:
        raise DurableError(
            f"durable runs need DBOS, which is not installed ({e}); install the durable extra: "
            f"{INSTALL_HINT}"
        ) from None
    return dbos
