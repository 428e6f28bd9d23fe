"""``--dist loadgroup`` that works: tests marked ``xdist_group`` run on one worker.

pytest-xdist 3.8 groups by a suffix it appends to each marked test's ``nodeid`` in the worker; from
pytest 9.2 on ``nodeid`` is derived from the node's structured id, the assignment changes nothing
and every test is scheduled on its own (a module-scoped UI server or mypy run then starts once per
worker). Here the workers write the groups they collected (nodeid -> group) to a folder the
controller made, and the controller schedules with them: same semantics, no reliance on renaming
nodes. Without xdist, or with another ``--dist``, nothing here does anything.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

_KEY = "loopkit_xdist_groups"
_FOLDER = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    if _is_controller(config) and config.getoption("dist", default=None) == "loadgroup":
        config.stash[_FOLDER] = Path(tempfile.mkdtemp(prefix="loopkit-xdist-groups-"))


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_FOLDER, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Controller: tell each worker where to write its groups."""
    folder = node.config.stash.get(_FOLDER, None)
    if folder is not None:
        node.workerinput[_KEY] = str(folder)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Worker: write ``{nodeid: group}`` of the marked tests (the collection is final here)."""
    folder = getattr(config, "workerinput", {}).get(_KEY)
    if folder is None:
        return
    groups = {}
    for item in items:
        names = sorted(
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        )
        if names:
            groups[item.nodeid] = "_".join(dict.fromkeys(names))
    worker = config.workerinput["workerid"]  # type: ignore[attr-defined]
    target = Path(folder) / f"{worker}.json"
    scratch = target.with_suffix(".tmp")
    scratch.write_text(json.dumps(groups), encoding="utf-8")
    os.replace(scratch, target)  # whole or absent when the controller reads it


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Controller: a loadgroup scheduler that reads the workers' groups."""
    folder = config.stash.get(_FOLDER, None)
    if folder is None:
        return None
    from xdist.scheduler import LoadScopeScheduling

    class MarkedGroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """One work unit per group, one per test otherwise (as ``loadgroup`` means)."""

        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                # Every worker has written its file before it reported its collection, and
                # scheduling starts once all have: any one file is the whole answer.
                files = sorted(folder.glob("*.json"))
                self._groups = json.loads(files[0].read_text(encoding="utf-8")) if files else {}
            group = self._groups.get(nodeid)
            return f"group:{group}" if group is not None else nodeid

    return MarkedGroupScheduling(config, log)


def _is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput") and bool(
        config.getoption("numprocesses", default=None)
    )
