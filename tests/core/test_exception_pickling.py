"""Every exception class of loopkit, loopkit_tools, loopkit_ui and loopkit_board round-trips
through pickle with its message and fields.

A failed durable run's error is stored pickled (DBOS) and read back when the run is listed; an
error whose ``__init__`` takes keyword-only or other arguments than the message could not be read
back (Python's own pickling calls ``cls(*args)``). The classes are found by importing every
module of the four packages, so a new exception class is checked without being listed here; one
whose ``__init__`` needs arguments must get sample arguments in ``SAMPLES``.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
from pathlib import Path
from typing import Any

import pytest

from loopkit.errors import ProviderError

PACKAGES = ("loopkit", "loopkit_tools", "loopkit_ui", "loopkit_board")

#: Sample constructor arguments (args, kwargs) for the classes whose ``__init__`` is their own.
SAMPLES: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "loopkit.errors.ProviderError": (
        ("rate limited",),
        {"retryable": True, "status_code": 429, "retry_after": 2.5, "provider": "openai"},
    ),
    "loopkit.errors.BudgetExceededError": (("budget spent",), {"used": 400_123, "budget": 400_000}),
    "loopkit.errors.MaxConsecutiveErrorsError": (
        ("3 failing rounds",),
        {"tools": ["build_app"], "round": 7, "errors": [ValueError("bad build")]},
    ),
    "loopkit.errors.OutputValidationError": (
        ("not valid",),
        {"output_type": "Plan", "errors": "steps: missing", "text": "{}", "attempts": 3},
    ),
    "loopkit.durable.errors.DatabaseUnavailableError": (
        ("the database cannot be reached (no socket)",),
        {"reason": "no socket"},
    ),
    "loopkit.middleware.fallback.AllClientsFailedError": (
        (["a", "b"],),
        {
            "errors": [
                ProviderError("down", retryable=True),
                ProviderError(
                    "429", retryable=True, status_code=429, retry_after=1.0, provider="x"
                ),
            ]
        },
    ),
    "loopkit_tools.fd_paths.ResolveError": (
        ("outside", ["a", "b"]),
        {"outside_root": True, "via_link": True},
    ),
    "loopkit_ui.backends.dbus_client.DBusCallError": (
        ("org.freedesktop.DBus.Error.Failed", "it broke"),
        {},
    ),
    "loopkit_ui.backends.protocol.AmbiguousElementError": (
        ("two match",),
        {"candidates": ["ok", "ok2"]},
    ),
    "loopkit_ui.backends.protocol.ElementNotFoundError": (
        ("none",),
        {"suggestions": ["save_button"]},
    ),
    "loopkit_board.limits.LimitReached": (("too many wrong passwords",), {"retry_after": 41.2}),
    "loopkit_ui.backends.protocol.StaleRefError": (
        ("ref e12 is stale",),
        {"suggestions": ["e13"]},
    ),
    "loopkit_ui.cli_input.Interrupted": ((15,), {}),
    "loopkit_ui.scripts.loader.ScriptLoadError": (("s.json", ["step 1: no action"]), {}),
    "loopkit_ui.scripts.store.ResultStoreError": ((Path("/tmp/r.sqlite"), "not SQLite"), {}),
}


def exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in a module of the four packages, by qualified name."""
    found: dict[str, type[BaseException]] = {}
    for name in PACKAGES:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            if info.name.rsplit(".", 1)[-1] == "__main__":
                continue  # entry points: their classes live in the modules they run
            module = importlib.import_module(info.name)
            for obj in vars(module).values():
                if (
                    inspect.isclass(obj)
                    and issubclass(obj, BaseException)
                    and obj.__module__ == module.__name__
                ):
                    found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


CLASSES = exception_classes()


def own_init(cls: type[BaseException]) -> bool:
    return any("__init__" in vars(c) for c in cls.__mro__[:-1] if c.__module__ != "builtins")


def same(a: Any, b: Any) -> bool:
    """Equal, with exceptions compared by type, message and fields."""
    if isinstance(a, BaseException):
        return type(a) is type(b) and a.args == b.args and same(vars(a), vars(b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def test_the_enumeration_finds_the_known_exception_classes() -> None:
    assert {
        "loopkit.errors.ProviderError",
        "loopkit.errors.BudgetExceededError",
        "loopkit.durable.errors.DurableReplayError",
        "loopkit_tools.fd_paths.ResolveError",
        "loopkit_ui.backends.protocol.UIError",
        "loopkit_board.service.BoardError",
    } <= set(CLASSES)
    assert len(CLASSES) >= 40


def test_every_class_with_its_own_init_has_sample_arguments() -> None:
    missing = sorted(n for n, c in CLASSES.items() if own_init(c) and n not in SAMPLES)
    assert not missing, f"add sample arguments to SAMPLES for {missing}"


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_an_exception_round_trips_through_pickle_with_its_fields(name: str) -> None:
    cls = CLASSES[name]
    args, kwargs = SAMPLES.get(name, (("something went wrong",), {}))
    error = cls(*args, **kwargs)
    for protocol in (2, pickle.DEFAULT_PROTOCOL, pickle.HIGHEST_PROTOCOL):
        back = pickle.loads(pickle.dumps(error, protocol=protocol))
        assert type(back) is cls
        assert back.args == error.args
        assert str(back) == str(error)
        assert same(vars(back), vars(error)), (vars(back), vars(error))
        for field in vars(error):
            assert same(getattr(back, field), getattr(error, field)), field
    if own_init(cls):
        assert vars(error), f"{name}: the sample should give the error some fields to check"
