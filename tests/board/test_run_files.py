"""Files of a run folder, which code the model wrote can fill with links: only regular files
with one link, reached without a symlink, outside ``repo/``, are read, listed, inlined in the
report or uploaded to Slack; the board's own files replace a planted link instead of writing
through it. Real files, links and hard links in a temp folder."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from loopkit_board.artifacts import open_run_file, read_run_file, run_artifacts, write_run_file
from loopkit_board.slack.posts import run_files
from tests.installed import import_or_unavailable

PNG = b"\x89PNG\r\n\x1a\n a screenshot"


def planted_run(tmp_path: Path) -> tuple[Path, Path]:
    """A run folder with one honest screenshot and every kind of planted link; and a secret
    file outside it."""
    run = tmp_path / "run"
    (run / "repo" / "app").mkdir(parents=True)
    (run / "ui").mkdir()
    (run / "ui" / "shot-1.png").write_bytes(PNG)
    secret = tmp_path / "secret.txt"
    secret.write_text("the key is sk-ant-planted\n")
    (run / "repo" / "app" / "config.png").write_text("repo file\n")
    os.link(run / "repo" / "app" / "config.png", run / "ui" / "hard-repo.png")
    os.link(secret, run / "ui" / "hard-secret.png")
    os.symlink(secret, run / "ui" / "soft-secret.png")
    os.symlink(run / "ui" / "shot-1.png", run / "ui" / "soft-inside.png")
    os.symlink(tmp_path, run / "up")  # a folder link: up/secret.txt
    (run / "report.html").write_text("<p>the script runner's report</p>")
    return run, secret


def test_only_regular_files_with_one_link_are_opened(tmp_path: Path) -> None:
    run, _ = planted_run(tmp_path)
    assert read_run_file(run, "ui/shot-1.png", max_bytes=10_000) == PNG
    assert read_run_file(run, "report.html", max_bytes=10_000) is not None
    refused = ["ui/hard-repo.png", "ui/hard-secret.png", "ui/soft-secret.png",
               "ui/soft-inside.png", "up/secret.txt", "repo/app/config.png", ".git/config",
               "ui/../ui/shot-1.png", "../secret.txt", "/etc/passwd", "ui//shot-1.png", "ui",
               "", "ui/shot-1.png\0", "ui\\shot-1.png", "nothing.png"]  # fmt: skip
    for relative in refused:
        assert open_run_file(run, relative) is None, relative
    assert read_run_file(run, "ui/shot-1.png", max_bytes=10) is None  # bigger than allowed
    listed = run_artifacts(run)
    assert listed.images == ["ui/shot-1.png"] and listed.reports == ["report.html"]


def test_the_boards_files_replace_a_planted_link(tmp_path: Path) -> None:
    run, secret = planted_run(tmp_path)
    os.symlink(secret, run / "board-report.html")
    os.symlink(secret, run / "run.gif")
    write_run_file(run, "board-report.html", b"<p>report</p>")
    assert secret.read_text() == "the key is sk-ant-planted\n"
    assert not (run / "board-report.html").is_symlink()
    assert (run / "board-report.html").read_bytes() == b"<p>report</p>"
    with pytest.raises(ValueError, match="plain file name"):
        write_run_file(run, "../x", b"")
    assert sorted(p.name for p in run.iterdir() if p.name.endswith(".tmp")) == []


def test_slack_uploads_nothing_a_link_points_to(tmp_path: Path) -> None:
    import_or_unavailable("PIL", install="the dev extra")
    from PIL import Image

    run, secret = planted_run(tmp_path)
    Image.new("RGB", (4, 3), "red").save(run / "ui" / "shot-1.png")
    os.symlink(secret, run / "board-report.html")  # replaced by the report the board writes
    (run / "ui" / "planted.gif").unlink(missing_ok=True)
    os.link(secret, run / "ui" / "planted.gif")

    class Service:  # the two calls run_files makes, answered from the planted folder
        async def report(self, run_id: str) -> Path:
            return write_run_file(run, "board-report.html", b"<p>the board's report</p>")

        async def run_details(self, run_id: str) -> SimpleNamespace:
            return SimpleNamespace(artifacts=run_artifacts(run))

    files = asyncio.run(run_files(Service(), "r1"))  # type: ignore[arg-type]
    names = [f.name for f in files]
    assert names == ["board-report.html", "run.gif"], names
    assert files[0].data == b"<p>the board's report</p>"
    assert files[1].data.startswith(b"GIF8")  # made from the one honest screenshot
    assert all(b"sk-ant-planted" not in f.data for f in files)
    assert secret.read_text() == "the key is sk-ant-planted\n"
