"""The X clipboard's text, through ``xclip`` (Debian package ``xclip``).

An X selection has no storage: its owner process serves every request for it. ``xclip -i``
becomes that owner (it forks into the background and serves until another program takes the
clipboard, or the display ends), which is what a copy in an application does too; ``xclip -o``
asks the current owner (the app, after its own copy) for the text.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from loopkit_ui.backends.protocol import UIError

__all__ = ["XClipboard"]

_TIMEOUT = 5.0


class XClipboard:
    """Read and write the CLIPBOARD selection of one X display."""

    def __init__(self, display: str | None) -> None:
        self.display = display

    def _command(self, *args: str) -> tuple[list[str], dict[str, str]]:
        program = shutil.which("xclip")
        if program is None:
            raise UIError(
                "the clipboard tools need xclip (Debian: apt-get install xclip; "
                "scripts/setup.sh installs it)"
            )
        if not self.display:
            raise UIError("no DISPLAY: the clipboard belongs to an X display")
        env = {"DISPLAY": self.display, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        if os.environ.get("XAUTHORITY"):
            env["XAUTHORITY"] = os.environ["XAUTHORITY"]
        return [program, "-selection", "clipboard", *args], env

    def read(self) -> str:
        """The clipboard's text; "" when nothing (or no text) is on it."""
        command, env = self._command("-o")
        try:
            done = subprocess.run(
                command, env=env, capture_output=True, timeout=_TIMEOUT, check=False
            )
        except subprocess.TimeoutExpired:
            raise UIError(
                f"the clipboard's owner did not answer within {_TIMEOUT:g} s (is the app busy?)"
            ) from None
        if done.returncode != 0:
            return ""  # "target STRING not available": an empty clipboard
        return done.stdout.decode("utf-8", "replace")

    def write(self, text: str) -> None:
        """Own the clipboard with ``text`` (an xclip in the background serves it)."""
        command, env = self._command("-i")
        # xclip forks a child that keeps serving: it must not hold our pipes open.
        try:
            subprocess.run(
                command,
                env=env,
                input=text.encode("utf-8"),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=_TIMEOUT,
                check=True,
            )
        except (subprocess.SubprocessError, OSError) as error:
            raise UIError(f"xclip could not take the clipboard: {error}") from None
