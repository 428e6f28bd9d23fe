"""A racing process for the guard's race tests: swaps two paths with renameat2(RENAME_EXCHANGE).

Usage: python rename_racer.py PATH_A PATH_B

It prints "ready" once the first swap succeeded, then swaps the two entries in a tight loop until
it gets SIGTERM; it then swaps once more if needed so both names hold what they held at the start,
and prints the number of swaps. Typical use: PATH_A a folder inside the workspace, PATH_B a symlink
to a folder outside it, so that at any moment the folder's name is either the real folder or the
symlink, exactly what an attacker racing a check-then-open guard would do.
"""

from __future__ import annotations

import ctypes
import os
import platform
import signal
import sys

AT_FDCWD = -100
RENAME_EXCHANGE = 2
# renameat2's syscall number, for a libc without the renameat2 wrapper (glibc < 2.28).
_SYSCALL = {"x86_64": 316, "aarch64": 276}


def exchanger() -> object:
    libc = ctypes.CDLL(None, use_errno=True)
    if hasattr(libc, "renameat2"):
        fn = libc.renameat2
        fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        return lambda a, b: fn(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
    number = _SYSCALL[platform.machine()]
    return lambda a, b: libc.syscall(number, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)


def main() -> int:
    a, b = (os.fsencode(p) for p in sys.argv[1:3])
    swap = exchanger()
    stop = False

    def on_term(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    if swap(a, b) != 0:  # type: ignore[operator]
        err = ctypes.get_errno()
        print(f"renameat2 failed: {os.strerror(err)}", flush=True)
        return 1
    swaps = 1
    print("ready", flush=True)
    while not stop:
        if swap(a, b) == 0:  # type: ignore[operator]
            swaps += 1
    while swaps % 2:  # leave both names as they were at the start
        if swap(a, b) == 0:  # type: ignore[operator]
            swaps += 1
    print(swaps, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
