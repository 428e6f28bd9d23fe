"""The queue carries the role: ``python -m loopkit.runs enqueue --role`` records it in the run,
with the repository and the message, and the role's limits in the run's settings."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")

ROOT = Path(__file__).resolve().parents[2]
CARD = ROOT / "examples" / "cards" / "delete-asks-for-confirmation.md"


def runs(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LOOPKIT_RUNS_DIR": str(tmp_path / "runs")}
    env.pop("LOOPKIT_DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "loopkit.runs", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_queued_run_records_its_role_repository_and_message(tmp_path: Path) -> None:
    card = tmp_path / CARD.name
    shutil.copy(CARD, card)
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "examples" / "invoice_app", repo / "invoice_app")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    queued = runs(
        tmp_path, "enqueue", str(card), "--role", "document", "--repo", str(repo),
        "--message", "remember: short sentences",
    )  # fmt: skip
    assert queued.returncode == 0, queued.stderr
    run_id = queued.stdout.strip()
    shown = json.loads(runs(tmp_path, "show", run_id, "--json").stdout)
    assert shown["role"] == "document"

    from loopkit.cards import load_config
    from loopkit.cards.durable import CardRunRequest
    from loopkit.demo.durable_runs import runtime_for

    async def stored() -> Any:
        async with runtime_for(load_config(runs_dir=tmp_path / "runs")) as runtime:
            return await runtime.get_run(run_id)

    run = asyncio.run(stored())
    assert run is not None
    request = CardRunRequest.model_validate(run.inputs["args"][0])
    assert (request.role, request.repo, request.message) == (
        "document",
        str(repo.resolve()),
        "remember: short sentences",
    )
    assert request.runner_config().max_rounds == 40  # the document role's own limit


def test_an_unknown_role_is_refused_before_anything_is_queued(tmp_path: Path) -> None:
    card = tmp_path / CARD.name
    shutil.copy(CARD, card)
    refused = runs(tmp_path, "enqueue", str(card), "--role", "nope")
    assert refused.returncode == 2
    assert refused.stderr == "error: unknown role 'nope'; the roles are: develop, document, test\n"
    assert not (tmp_path / "runs").exists()


def test_one_queued_run_per_card_and_role(tmp_path: Path) -> None:
    card = tmp_path / CARD.name
    shutil.copy(CARD, card)
    develop = runs(tmp_path, "enqueue", str(card)).stdout.strip()
    document = runs(tmp_path, "enqueue", str(card), "--role", "document")
    assert document.returncode == 0, document.stderr
    assert document.stdout.strip() != develop  # another role: another run
    again = runs(tmp_path, "enqueue", str(card), "--role", "document")
    assert again.stdout.strip() == document.stdout.strip()
    assert "already has a queued or running run" in again.stderr
