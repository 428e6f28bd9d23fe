"""Errors of durable runs."""

from __future__ import annotations

from loopkit.errors import LoopkitError

__all__ = ["DurableError", "DurableReplayError"]


class DurableError(LoopkitError):
    """A durable run cannot be started, read or resumed (the message says why)."""


class DurableReplayError(DurableError):
    """A resumed run did not take the path its checkpoints recorded (the code or its inputs
    changed since the run was interrupted), so its checkpoints cannot be trusted."""
