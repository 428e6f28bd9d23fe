"""The board over real HTTP, given what a hostile client sends: cards named outside the cards
folder, odd path and query parameters on every route. Nothing may reach a file outside the
folder, nothing may answer 500 or show a traceback.

A real ``python -m loopkit_board`` process on a free loopback port (working in a temp folder,
so a file there is "in the working folder but not in the cards folder"), a real durable runs
database (SQLite); no worker, so a queued run stays queued.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.board.helpers import (
    CARD,
    CARDS,
    ROOT,
    TOKEN,
    board_env,
    copy_card,
    csrf_of,
    running_board,
)
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")
pytestmark = pytest.mark.integration


def _runs(client: httpx.Client) -> list[str]:
    return re.findall(r'href="/runs/([0-9a-f]{32})"', client.get("/runs").text)


def test_a_card_outside_the_cards_folder_is_never_queued_nor_shown(tmp_path: Path) -> None:
    cards = tmp_path / "cards"
    copy_card(cards)
    # the same card name, in the board's working folder but not in the cards folder
    outside = copy_card(tmp_path, "total-ignores-the-discount")
    elsewhere = tmp_path / "elsewhere"
    copy_card(elsewhere, "total-ignores-the-discount")
    os.symlink(elsewhere / "total-ignores-the-discount.md", cards / "linked.md")
    before = outside.read_bytes(), (elsewhere / "total-ignores-the-discount.md").read_bytes()
    with running_board(tmp_path, cwd=tmp_path) as board, board.client() as client:
        board.login(client)
        csrf = csrf_of(client.get("/").text)
        for name in ("total-ignores-the-discount.md", "linked.md", "nothing-here.md", "x"):
            started = client.post(f"/cards/{name}/run", data={"csrf": csrf})
            assert started.status_code == 404, (name, started.text)
            assert started.text.startswith("run not started: ") and "card" in started.text
            assert client.get(f"/cards/{name}").status_code == 404, name
            saved = client.post(
                f"/cards/{name}", data={"text": "---\ntitle: x\n---\n", "csrf": csrf}
            )
            assert saved.status_code == 404, name
        assert _runs(client) == []
        # the link is listed with why it is not read, not with the outside file's text
        home = client.get("/").text
        assert "a link to a file outside the cards folder" in home
        assert "Total ignores the discount" not in home
        # a run queued by hand with a card outside the folder: its follow-up is refused too
        queued = subprocess.run(
            [sys.executable, "-m", "loopkit.runs", "enqueue", str(outside)],
            cwd=ROOT, env=board_env(tmp_path), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert queued.returncode == 0, queued.stderr
        run_id = queued.stdout.split()[0]
        follow = client.post(f"/runs/{run_id}/follow-up", data={"csrf": csrf})
        assert follow.status_code == 404 and "no such card" in follow.text
        assert _runs(client) == [run_id]
        # the card of the folder itself still runs
        good = client.post(f"/cards/{CARD}.md/run", data={"csrf": csrf})
        assert good.status_code == 303
    assert (outside.read_bytes(), (elsewhere / "total-ignores-the-discount.md").read_bytes()) == (
        before
    )


#: Values a client may put where a run id, a card name, a file path or ``after`` goes.
ODD = ["²", "١", "%00", "a%00b", "%ff%fe", "..", "%2e%2e", "x" * 5000, "%F0%9F%92%A5",
       "%E2%80%AE", " 1", "1 ", "-1", "+1", "1e3", "0x10", "9" * 30, "%0d%0aX: y", "'", '"',
       "%25", "\\", "NaN", "[]", "{}"]  # fmt: skip


def _answer_to(
    client: httpx.Client, method: str, url: str, headers: dict[str, str], data: dict[str, str]
) -> tuple[int, str]:
    """(status, the start of the body). An event stream that opens (``/runs/../events`` is the
    board's own ``/events``) is only opened: it answers for as long as the board runs."""
    with client.stream(method, url, headers=headers, data=data if method == "POST" else None) as r:
        if r.headers.get("content-type", "").startswith("text/event-stream"):
            return r.status_code, ""
        return r.status_code, r.read().decode("utf-8", "replace")


def test_every_parameter_is_parsed_strictly(tmp_path: Path) -> None:
    copy_card(tmp_path / "cards")
    with running_board(tmp_path) as board, board.client() as client:
        board.login(client)
        csrf = csrf_of(client.get("/").text)
        queued = client.post(f"/cards/{CARD}.md/run", data={"csrf": csrf})
        run_id = re.search(r"/runs/([0-9a-f]{32})", queued.headers["location"]).group(1)  # type: ignore[union-attr]
        events = f"/runs/{run_id}/events"
        for after in ("²", "١", "-1", "1e3", " 1", "1 ", "0x1", "9" * 30, "1.0", "%00"):
            answer = client.get(f"{events}?after={after}")
            assert answer.status_code == 400, (after, answer.status_code, answer.text[:200])
            assert "after: expected the number" in answer.text
        bearer = {"authorization": f"Bearer {TOKEN}"}
        seen: dict[int, int] = {}
        for odd in ODD:
            requests = [
                ("GET", f"/runs/{odd}"), ("GET", f"/runs/{odd}/events"),
                ("GET", f"/runs/{odd}/report"), ("GET", f"/runs/{odd}/files/x.png"),
                ("GET", f"/runs/{run_id}/files/{odd}"), ("GET", f"/runs/{run_id}/files/ui/{odd}"),
                ("GET", f"/cards/{odd}"), ("POST", f"/cards/{odd}"), ("POST", f"/cards/{odd}/run"),
                ("POST", f"/runs/{odd}/chat"), ("POST", f"/runs/{odd}/cancel"),
                ("POST", f"/runs/{odd}/follow-up"), ("GET", f"/?message={odd}"),
                ("GET", f"{events}?after={odd}"),
            ]  # fmt: skip
            for method, url in requests:
                for headers, data in (({}, {"csrf": csrf, "text": odd}), (bearer, {"role": odd})):
                    status, text = _answer_to(client, method, url, headers, data)
                    seen[status] = seen.get(status, 0) + 1
                    assert status < 500, (method, url, text[:300])
                    assert "Traceback" not in text, (method, url)
        print(f"\nodd parameters: {sum(seen.values())} requests, statuses {sorted(seen.items())}")
        assert set(seen) <= {200, 303, 307, 400, 404, 405}, seen  # 307: a trailing slash
        # a good after still works, and the run is untouched by all of it
        assert client.get(f"/runs/{run_id}").status_code == 200
    card_text = (tmp_path / "cards" / f"{CARD}.md").read_text()
    assert card_text == (CARDS / f"{CARD}.md").read_text()


def test_no_server_path_in_what_the_board_shows(tmp_path: Path) -> None:
    cards = tmp_path / "cards"
    copy_card(cards)
    (cards / "broken.md").write_text("---\ntitle: [not closed\nstate: New\n---\nbody\n")
    (cards / "huge.md").write_text("---\ntitle: Huge\nstate: New\n---\n" + "x" * 200_000)
    (cards / "no-transcript.md").write_text("---\ntitle: No transcript\nstate: New\n---\nb\n")
    with running_board(tmp_path) as board, board.client() as client:
        board.login(client)
        csrf = csrf_of(client.get("/").text)
        shown = [
            client.get("/"),
            client.get("/cards/broken.md"),
            client.get("/cards/huge.md"),
            client.post("/cards/broken.md/run", data={"csrf": csrf}),
            client.post("/cards/huge.md/run", data={"csrf": csrf}),
            client.post("/cards/no-transcript.md/run", data={"csrf": csrf}),
            client.post(f"/cards/{CARD}.md/run", data={"csrf": csrf, "role": "wizard"}),
            client.post(f"/cards/{CARD}.md", data={"csrf": csrf, "text": "not a card"}),
            client.post("/cards", data={"csrf": csrf, "title": "T", "name": "../up"}),
            client.get("/cards/nothing.md"),
            client.post("/runs/0123abcd/chat", data={"csrf": csrf, "question": "?"}),
            client.post("/runs/0123abcd/cancel", data={"csrf": csrf}),
        ]
        statuses = [r.status_code for r in shown]
        assert statuses == [200, 200, 200, 400, 400, 400, 400, 400, 400, 404, 400, 400], statuses
        for answer in shown:
            for folder in {str(tmp_path), str(tmp_path.resolve()), str(ROOT)}:
                assert folder not in answer.text, (answer.request.url, answer.text[:500])
        assert "no-transcript.md" in shown[5].text  # the card is still named, by its file name
