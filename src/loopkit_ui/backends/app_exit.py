"""How the application under test ended, when an action made it exit (a Quit button).

Linux: a process that exited keeps its exit status in ``/proc/PID/stat`` until its parent reaps
it; the UI server is rarely that parent, so the status is read there while it lasts. Windows: a
process handle opened while the process runs yields its exit code afterwards
(``GetExitCodeProcess``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["ProcessWatch"]


class ProcessWatch:
    """Watches one process of the application: whether it ended, and with which status."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._handle: Any = None
        if sys.platform == "win32":
            self._handle = _open_process(pid)

    def wait(self, timeout: float) -> tuple[bool, str]:
        """Wait up to ``timeout`` s for the process to end; returns whether it ended and how
        (``exit status 1``, ``killed by signal 9``, or that the status is unknown)."""
        deadline = time.monotonic() + timeout
        while True:
            ended, status = self._poll()
            if ended or time.monotonic() >= deadline:
                return ended, status
            time.sleep(0.02)

    def _poll(self) -> tuple[bool, str]:
        if sys.platform == "win32":
            return _poll_windows(self._handle)
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return True, "exit status unknown (its parent collected it first)"
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] != "Z":
            return False, ""
        # Field 52 of proc(5): the status as waitpid(2) reports it (fields[0] is field 3).
        raw = int(fields[49]) if len(fields) > 49 else -1
        if raw < 0:
            return True, "exit status unknown"
        if raw & 0x7F:
            return True, f"killed by signal {raw & 0x7F}"
        return True, f"exit status {raw >> 8}"

    def close(self) -> None:
        """Release the process handle (Windows)."""
        if self._handle is not None:
            _close_handle(self._handle)
            self._handle = None


# -- Windows (never called elsewhere; not run on the Linux build machine) --------------------

_SYNCHRONIZE = 0x00100000
_PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
_STILL_ACTIVE = 259


def _kernel32() -> Any:
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    kernel32.OpenProcess.argtypes = (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)
    kernel32.OpenProcess.restype = wintypes.HANDLE
    kernel32.GetExitCodeProcess.argtypes = (wintypes.HANDLE, ctypes.POINTER(wintypes.DWORD))
    kernel32.GetExitCodeProcess.restype = wintypes.BOOL
    kernel32.CloseHandle.argtypes = (wintypes.HANDLE,)
    kernel32.CloseHandle.restype = wintypes.BOOL
    return kernel32


def _open_process(pid: int) -> Any:
    handle = _kernel32().OpenProcess(_SYNCHRONIZE | _PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
    return handle or None


def _poll_windows(handle: Any) -> tuple[bool, str]:
    import ctypes
    from ctypes import wintypes

    if handle is None:
        return True, "exit status unknown (the process could not be opened)"
    code = wintypes.DWORD()
    if not _kernel32().GetExitCodeProcess(handle, ctypes.byref(code)):
        return True, "exit status unknown"
    if code.value == _STILL_ACTIVE:
        return False, ""
    return True, f"exit status {code.value}"


def _close_handle(handle: Any) -> None:
    _kernel32().CloseHandle(handle)
