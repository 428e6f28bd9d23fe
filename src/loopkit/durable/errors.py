"""Errors of durable runs."""

from __future__ import annotations

from loopkit.errors import LoopkitError

__all__ = ["DatabaseUnavailableError", "DurableError", "DurableReplayError"]


class DurableError(LoopkitError):
    """A durable run cannot be started, read or resumed (the message says why)."""


class DurableReplayError(DurableError):
    """A resumed run did not take the path its checkpoints recorded (the code or its inputs
    changed since the run was interrupted), so its checkpoints cannot be trusted."""


class DatabaseUnavailableError(DurableError):
    """The durable runs' database cannot be reached now (stopped, restarting, the network is
    down): nothing is wrong with the request, try it again once the database is back. Workers,
    the board and the Slack bot wait for it by themselves. ``reason`` is the driver's, one
    line."""

    def __init__(self, message: str, *, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason
