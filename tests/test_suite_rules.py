"""The suite's own rules: a promised install never skips quietly, and the helpers that keep
parallel runs apart (process markers, held ports) do what they say."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.installed import REQUIRE_ENV
from tests.ports import closed_port
from tests.processes import Marker, processes_with, unique_marker

ROOT = Path(__file__).resolve().parents[1]

_NEEDS_A_MODULE = """
from tests.installed import import_or_unavailable

import_or_unavailable("loopkit_no_such_module", install="the dev extra")


def test_never_reached() -> None:
    pass
"""


def _pytest(test_file: Path, *, required: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop(REQUIRE_ENV, None)
    if required:
        env[REQUIRE_ENV] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist",
         "--rootdir", str(test_file.parent), str(test_file)],
        cwd=test_file.parent, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_missing_module_fails_where_the_install_is_promised(tmp_path: Path) -> None:
    test_file = tmp_path / "test_needs_a_module.py"
    test_file.write_text(_NEEDS_A_MODULE)
    promised = _pytest(test_file, required=True)
    output = promised.stdout + promised.stderr
    assert promised.returncode != 0, output
    assert f"{REQUIRE_ENV} is set but loopkit_no_such_module cannot be imported" in output
    assert "run scripts/setup.sh --tests" in output
    quick = _pytest(test_file, required=False)  # a quick run elsewhere: skipped, saying why
    assert quick.returncode == 5, quick.stdout + quick.stderr  # 5: the module skipped, none ran
    assert "1 skipped" in quick.stdout and "comes with the dev extra" in quick.stdout


def test_no_test_module_skips_quietly_on_a_missing_import() -> None:
    # pytest.importorskip skips even where scripts/test.sh promised the install: use
    # tests.installed.import_or_unavailable (it fails under LOOPKIT_REQUIRE_DESKTOP).
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if path != Path(__file__)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bimportorskip\(", line)
    ]
    assert found == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux /proc")
def test_a_marker_matches_whole_environment_entries_only() -> None:
    marker = unique_marker("LOOPKIT_SUITE_RULES_TEST")
    assert marker != unique_marker("LOOPKIT_SUITE_RULES_TEST")  # unique to each call
    env = {**os.environ, marker.name: marker.value + "0"}
    longer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    try:
        # another run's value that merely starts with ours is not ours
        assert processes_with(marker) == []
        assert processes_with(Marker(marker + "0")) == [longer.pid]
    finally:
        longer.kill()
        longer.wait()
    # a plain string (say f"NAME={tmp_path.name}", the same in every copy of the suite) is refused
    with pytest.raises(TypeError, match=r"make it with tests\.processes\.unique_marker"):
        processes_with(str(marker))  # type: ignore[arg-type]


def test_a_closed_port_refuses_and_stays_taken() -> None:
    with closed_port() as port:
        with socket.socket() as probe, pytest.raises(ConnectionRefusedError):
            probe.connect(("127.0.0.1", port))
        with socket.socket() as other, pytest.raises(OSError):
            other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            other.bind(("127.0.0.1", port))  # nobody else can listen there meanwhile


_GROUPED = """
import os
from pathlib import Path

import pytest

OUT = Path(os.environ["LOOPKIT_GROUPS_OUT"])


@pytest.fixture(scope="module")
def started_once() -> int:
    return 1


@pytest.mark.parametrize("n", range(6))
def test_uses_a_module_fixture(started_once: int, n: int) -> None:
    (OUT / f"module-{n}").write_text(os.environ["PYTEST_XDIST_WORKER"])


@pytest.mark.xdist_group("explicit")
@pytest.mark.parametrize("n", range(6))
def test_marked(n: int) -> None:
    (OUT / f"marked-{n}").write_text(os.environ["PYTEST_XDIST_WORKER"])
"""


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    # pytest-xdist 3.8's own loadgroup renames nodes, which pytest 9.2 ignores: every test went
    # anywhere. tests/xdist_groups.py schedules the groups itself; tests/conftest.py groups the
    # tests that share a module-scoped fixture.
    (tmp_path / "test_grouped.py").write_text(_GROUPED)
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["LOOPKIT_GROUPS_OUT"] = str(out)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
         "-n", "3", "--dist", "loadgroup", "--no-loadscope-reorder", "--rootdir", str(tmp_path),
         str(tmp_path / "test_grouped.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    for kind in ("module", "marked"):
        workers = {(out / f"{kind}-{n}").read_text() for n in range(6)}
        assert len(workers) == 1, (kind, workers)
