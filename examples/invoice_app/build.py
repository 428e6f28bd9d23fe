"""Build check for the app: ``python -m invoice_app.build``.

Byte-compiles every module of the package and imports each one (with the offscreen Qt
platform, so no display is needed). Errors are printed as ``path:line: error: message``,
then ``build succeeded`` (exit status 0) or ``build failed: N errors`` (exit status 1).
Only the standard library is used here, so a broken app module cannot break the check itself.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
PACKAGE = PACKAGE_DIR.name


def module_files(package_dir: Path = PACKAGE_DIR) -> list[Path]:
    """The package's Python files, sorted."""
    return sorted(package_dir.glob("*.py"))


def compile_errors(path: Path) -> list[str]:
    """Byte-compile one file in memory; return its syntax errors as build lines."""
    try:
        compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        return [_syntax_line(exc, path)]
    except ValueError as exc:  # e.g. null bytes in the source
        return [f"{path}:1: error: {exc}"]
    return []


def import_errors(path: Path) -> list[str]:
    """Import the module of ``path``; return the failure as a build line (or nothing)."""
    name = PACKAGE if path.stem == "__init__" else f"{PACKAGE}.{path.stem}"
    try:
        importlib.import_module(name)
    except SyntaxError as exc:  # a module it imports does not compile
        return [_syntax_line(exc, path)]
    except Exception as exc:
        return [f"{_location(exc, path)}: error: {type(exc).__name__}: {exc}"]
    return []


def _syntax_line(exc: SyntaxError, fallback: Path) -> str:
    return f"{exc.filename or fallback}:{exc.lineno or 1}: error: {exc.msg}"


def _location(exc: BaseException, fallback: Path) -> str:
    """The innermost traceback frame inside the package, as ``path:line``."""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if Path(frame.filename).resolve().parent == PACKAGE_DIR
    ]
    if frames:
        return f"{frames[-1].filename}:{frames[-1].lineno}"
    return f"{fallback}:1"


def run() -> int:
    """Check every module; print the errors and the result line; return the exit status."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    errors: list[str] = []
    files = module_files()
    for path in files:
        errors += compile_errors(path)
    for path in files:
        if path.stem != "build":  # build is this module, already running
            errors += import_errors(path)
    # One broken module also breaks every module that imports it: report each error once.
    unique = list(dict.fromkeys(errors))
    for line in unique:
        print(line)
    if unique:
        print(f"build failed: {len(unique)} errors")
        return 1
    print("build succeeded")
    return 0


if __name__ == "__main__":
    sys.exit(run())
