"""Fixtures of the loopkit_tools tests (defined in tools_helpers.py)."""

from tools_helpers import tools, workspace

__all__ = ["tools", "workspace"]
