"""The roles a run can take, and the checks before one is queued, as the queue knows them.

Two shapes of the application are handled: roles as Markdown files found by the demo's role
catalog (``loopkit.demo.role_tools``: ``develop``, ``test``, ``document`` and the user's own in
``roles_dir``), and, before those existed, the fixed tuple ``loopkit.cards.durable.ROLES``. The
board passes the role's name through to the queue (:class:`~loopkit.cards.durable.CardRunRequest`)
either way; the worker runs it.
"""

from __future__ import annotations

import inspect
from pathlib import Path

from loopkit.cards.config import ConfigError, RunnerConfig
from loopkit.errors import CardError, LoopkitError

__all__ = ["RoleProblem", "available_roles", "check_run", "default_role"]


class RoleProblem(LoopkitError):
    """The role, or the card in that role, cannot be queued: the message says why."""


def available_roles(config: RunnerConfig) -> tuple[str, ...]:
    """The roles' names, the default first."""
    try:
        from loopkit.demo.role_tools import role_catalog  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        from loopkit.cards import durable

        return tuple(getattr(durable, "ROLES", ("developer",)))
    names: list[str] = list(role_catalog(config).names())
    first = default_role(config)
    return tuple([first, *sorted(n for n in names if n != first)] if first in names else names)


def default_role(config: RunnerConfig) -> str:
    from loopkit.cards import durable

    found = getattr(durable, "DEFAULT_ROLE", None)
    if isinstance(found, str):
        return found
    return str(getattr(durable, "ROLES", ("developer",))[0])


def check_run(config: RunnerConfig, card: Path, role: str) -> RunnerConfig:
    """Check that ``card`` can run in ``role`` (the role exists; with the scripted model, its
    transcript for the card exists) and return the settings to record with the run (the role's
    limits applied, where roles have limits). :class:`RoleProblem` naming what is wrong."""
    from loopkit.demo import run as demo_run

    try:
        try:
            from loopkit.demo.role_tools import find_role  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            if role not in available_roles(config):
                roles = ", ".join(available_roles(config))
                raise RoleProblem(f"role {role!r}: the roles are {roles}") from None
            name = role
        else:
            found = find_role(config, role)
            name = found.name
            with_limits = getattr(demo_run, "with_role_limits", None)
            if with_limits is not None:
                config = with_limits(config, found)
        if config.scripted:
            takes_role = "role" in inspect.signature(demo_run.check_model).parameters
            args = (config, card, name) if takes_role else (config, card)
            demo_run.check_model(*args)
    except RoleProblem:
        raise
    except (ConfigError, CardError, LoopkitError) as e:  # RoleError is a LoopkitError
        raise RoleProblem(str(e)) from None
    return config
