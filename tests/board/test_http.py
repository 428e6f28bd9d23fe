"""The board over real HTTP: login, CSRF, bad cards, bad input, and a restart that loses nothing.

A real ``python -m loopkit_board`` process on a free loopback port, a real durable runs database
(SQLite) in a temp folder; no worker, so a queued run stays queued.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import httpx
import pytest

from tests.board.helpers import (
    CARD,
    ROOT,
    TOKEN,
    board_env,
    copy_card,
    csrf_of,
    running_board,
    write_accounts,
)
from tests.installed import import_or_unavailable

import_or_unavailable("dbos", install="loopkit[durable]")
pytestmark = pytest.mark.integration

BROKEN = "---\ntitle: [not closed\nstate: New\n---\nbody\n"


def test_nothing_but_the_login_page_is_served_without_a_login(tmp_path: Path) -> None:
    copy_card(tmp_path / "cards")
    with running_board(tmp_path) as board, board.client() as client:
        assert client.get("/login").status_code == 200
        page = client.get("/", headers={"accept": "text/html"})
        assert page.status_code == 303 and page.headers["location"] == "/login"
        for path in ("/", "/runs", "/findings", "/static/board.js", f"/cards/{CARD}.md",
                     "/runs/0123/events", "/nothing-here"):  # fmt: skip
            assert client.get(path).status_code == 401, path
        assert client.post("/cards", data={"title": "x"}).status_code == 401
        assert not (tmp_path / "cards" / "x.md").exists()
        # a forged cookie is no login
        client.cookies.set("loopkit_board", "eyJ1IjoiYW5uIn0.0000")
        assert client.get("/").status_code == 401
        client.cookies.clear()

        wrong = board.login(client, password="not it")
        assert wrong.status_code == 401 and "Wrong name, password or token" in wrong.text
        assert client.get("/").status_code == 401
        right = board.login(client)
        assert right.status_code == 303
        home = client.get("/")
        assert home.status_code == 200 and f'data-card="{CARD}.md"' in home.text

    with running_board(tmp_path) as board, board.client() as client:
        # a token: as a bearer header (a program), and in the login form (a person)
        assert client.get("/", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert client.get("/", headers={"authorization": "Bearer wrong"}).status_code == 401
        page = client.get("/login")
        done = client.post("/login", data={"token": TOKEN, "csrf": csrf_of(page.text)})
        assert done.status_code == 303 and client.get("/").status_code == 200


def test_every_state_changing_request_needs_the_csrf_token(tmp_path: Path) -> None:
    cards = tmp_path / "cards"
    copy_card(cards)
    with running_board(tmp_path) as board, board.client() as client:
        # the login form itself: without its token (a foreign page posting it) → 403
        refused = client.post("/login", data={"name": "ann", "password": "x"})
        assert refused.status_code == 403
        assert board.login(client).status_code == 303
        csrf = csrf_of(client.get("/").text)
        card = f"/cards/{CARD}.md"
        before = (cards / f"{CARD}.md").read_text()
        new = {"title": "Made by a foreign page", "body": "x"}
        for sent in ({}, {"csrf": "wrong"}):
            assert client.post("/cards", data={**new, **sent}).status_code == 403
            assert client.post(card, data={"text": BROKEN, **sent}).status_code == 403
            assert client.post(f"{card}/run", data=sent).status_code == 403
            assert client.post("/logout", data=sent).status_code == 403
        assert list(cards.iterdir()) == [cards / f"{CARD}.md"]
        assert (cards / f"{CARD}.md").read_text() == before
        listing = client.get("/runs").text
        assert "no runs yet" in listing and 'data-run="' not in listing
        # the right token, but from another origin → refused too
        other = client.post(
            "/cards", data={**new, "csrf": csrf}, headers={"origin": "http://evil.example"}
        )
        assert other.status_code == 403
        # the right token: as a field or as the header
        made = client.post("/cards", data={**new, "csrf": csrf})
        assert made.status_code == 303 and made.headers["location"].startswith("/cards/")
        assert (cards / "made-by-a-foreign-page.md").is_file()
        chat = client.post(
            "/runs/nope/chat", data={"question": "?"}, headers={"x-csrf-token": csrf}
        )
        assert chat.status_code == 400 and "no run" in chat.text
        # a bearer request carries no ambient credential: no CSRF token needed
        bearer = httpx.post(
            board.url + "/cards",
            data={"title": "By a program", "body": "y"},
            headers={"authorization": f"Bearer {TOKEN}"},
        )
        assert bearer.status_code == 303


def test_an_unparseable_card_is_shown_with_its_error(tmp_path: Path) -> None:
    cards = tmp_path / "cards"
    copy_card(cards)
    (cards / "broken.md").write_text(BROKEN, encoding="utf-8")
    (cards / "no-front-matter.md").write_text("just text\n", encoding="utf-8")
    (cards / "bad-state.md").write_text("---\ntitle: T\nstate: Maybe\n---\n", encoding="utf-8")
    with running_board(tmp_path) as board, board.client() as client:
        board.login(client)
        home = client.get("/")
        assert home.status_code == 200
        assert f'data-card="{CARD}.md"' in home.text  # the good card is still there
        assert "the front matter is not valid YAML" in home.text
        assert "no front matter" in home.text
        assert "states are: New, In Work, In Test, Done, Failed" in home.text
        page = client.get("/cards/broken.md")
        assert page.status_code == 200 and "not valid YAML" in page.text
        # saving text that is not a card: refused with the reason, the file unchanged
        csrf = csrf_of(page.text)
        before = (cards / f"{CARD}.md").read_text()
        saved = client.post(f"/cards/{CARD}.md", data={"text": BROKEN, "csrf": csrf})
        assert saved.status_code == 400 and "not saved" in saved.text
        assert (cards / f"{CARD}.md").read_text() == before
        # a name that leaves the folder is refused
        assert client.get("/cards/..%2Fsecret.md").status_code == 404
        bad = client.post("/cards", data={"title": "T", "name": "../up", "csrf": csrf})
        assert bad.status_code == 400 and "expected a file name" in bad.text
        assert not (tmp_path / "up.md").exists()
        # a run of a card the scripted model has no transcript for: refused, nothing queued
        client.post("/cards", data={"title": "No transcript", "body": "x", "csrf": csrf})
        run = client.post("/cards/no-transcript.md/run", data={"csrf": csrf})
        assert run.status_code == 400 and "no transcript for no-transcript.md" in run.text
        bad_role = client.post(f"/cards/{CARD}.md/run", data={"csrf": csrf, "role": "wizard"})
        assert bad_role.status_code == 400 and "role 'wizard'" in bad_role.text


def test_a_restart_loses_nothing(tmp_path: Path) -> None:
    cards = tmp_path / "cards"
    copy_card(cards)
    copy_card(cards, "total-ignores-the-discount")
    with running_board(tmp_path) as board:
        client = board.client()
        board.login(client)
        csrf = csrf_of(client.get("/").text)
        first = client.post(f"/cards/{CARD}.md/run", data={"csrf": csrf})
        second = client.post("/cards/total-ignores-the-discount.md/run", data={"csrf": csrf})
        assert first.status_code == second.status_code == 303
        assert "place 2 in the queue" in unquote(second.headers["location"])
        ids = [re.search(r"/runs/([0-9a-f]+)", r.headers["location"]).group(1)  # type: ignore[union-attr]
               for r in (first, second)]  # fmt: skip
        client.post("/cards", data={"title": "Kept", "body": "b", "csrf": csrf})
        cookies = client.cookies
        client.close()
    with running_board(tmp_path) as board:
        # the login survives (the cookie key is on disk), and so does everything else
        client = board.client()
        client.cookies = cookies
        listing = client.get("/runs")
        assert listing.status_code == 200
        for run_id in ids:
            assert run_id[:12] in listing.text
        assert client.get(f"/runs/{ids[1]}").text.count("place 2 in the queue") == 1
        home = client.get("/").text
        assert 'data-card="kept.md"' in home
        # each queued card shows its run and its place on the board
        assert f'data-run="{ids[0]}">queued · place 1 in the queue' in home
        assert f'data-run="{ids[1]}">queued · place 2 in the queue' in home
        # the same card queued again is the same run (the queue deduplicates), not a third
        again = client.post(f"/cards/{CARD}.md/run", data={"csrf": csrf})
        assert ids[0] in again.headers["location"]
        assert "already has a run" in unquote(again.headers["location"])
        # the events of a queued run, from the start (a Last-Event-ID of the board's earlier
        # life is ignored: its numbering started anew), or after a given one
        assert first_events(client, ids[1], {"last-event-id": "7"}) == [
            (0, "queued", {"position": 2}),
            (1, "state", {"state": "queued"}),
        ]
        assert first_events(client, ids[1], {}, "?after=0", count=1) == [
            (1, "state", {"state": "queued"})
        ]
        # cancel the first: the second moves up to place 1; an ended run cannot be cancelled
        assert 'id="cancel-run"' in client.get(f"/runs/{ids[0]}").text
        assert client.post(f"/runs/{ids[0]}/cancel", data={}).status_code == 403
        cancelled = client.post(f"/runs/{ids[0]}/cancel", data={"csrf": csrf})
        assert cancelled.status_code == 303
        assert "place 1 in the queue" in client.get(f"/runs/{ids[1]}").text
        twice = client.post(f"/runs/{ids[0]}/cancel", data={"csrf": csrf})
        assert twice.status_code == 400 and "has ended (cancelled)" in twice.text
        client.close()


def first_events(
    client: httpx.Client, run_id: str, headers: dict[str, str], query: str = "", count: int = 2
) -> list[tuple[int, str, dict[str, object]]]:
    got: list[tuple[int, str, dict[str, object]]] = []
    with client.stream("GET", f"/runs/{run_id}/events{query}", headers=headers) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        for line in stream.iter_lines():
            if line.startswith("data:"):
                event = json.loads(line[5:])
                got.append((event["seq"], event["kind"], event["data"]))
                if len(got) == count:
                    break
    return got


def test_bad_command_lines_are_refused(tmp_path: Path) -> None:
    write_accounts(tmp_path)
    (tmp_path / "cards").mkdir()

    def board(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "loopkit_board", *args],
            cwd=ROOT, env=board_env(tmp_path), capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    common = ["--cards", str(tmp_path / "cards"), "--accounts", str(tmp_path / "accounts.toml")]
    remote = board(*common, "--host", "0.0.0.0")
    assert remote.returncode == 2 and "--allow-remote" in remote.stderr
    assert "Traceback" not in remote.stderr
    no_accounts = board("--cards", str(tmp_path / "cards"))
    assert no_accounts.returncode == 2 and "--accounts FILE is needed" in no_accounts.stderr
    (tmp_path / "plain.toml").write_text('[accounts]\nann = "hunter2"\n')
    plain = board("--cards", str(tmp_path / "cards"), "--accounts", str(tmp_path / "plain.toml"))
    assert plain.returncode == 2 and "argon2 hash" in plain.stderr
    hashed = subprocess.run(
        [sys.executable, "-m", "loopkit_board", "hash-password"],
        input="s3cret\n", capture_output=True, text=True, timeout=60, env=board_env(tmp_path),
    )  # fmt: skip
    assert hashed.returncode == 0 and hashed.stdout.startswith("$argon2id$")
    assert "s3cret" not in hashed.stdout
    port = board(*common, "--port", "99999")
    assert port.returncode == 2 and "--port 99999" in port.stderr
    no_cards = board(
        "--cards", str(tmp_path / "nope"), "--accounts", str(tmp_path / "accounts.toml")
    )
    assert no_cards.returncode == 2 and "not a folder of card files" in no_cards.stderr
    (tmp_path / "bad.toml").write_text("[accounts\n")
    bad = board("--cards", str(tmp_path / "cards"), "--accounts", str(tmp_path / "bad.toml"))
    assert bad.returncode == 2 and "not valid TOML" in bad.stderr
    for done in (port, no_cards, bad, plain, no_accounts):
        assert "Traceback" not in done.stderr


def test_a_foreign_host_name_is_refused(tmp_path: Path) -> None:
    with running_board(tmp_path) as board:
        rebound = httpx.get(board.url + "/login", headers={"host": "attacker.example"})
        assert rebound.status_code == 421


def test_a_logout_revokes_the_cookie_on_the_server_also_after_a_restart(tmp_path: Path) -> None:
    copy_card(tmp_path / "cards")
    with running_board(tmp_path) as board, board.client() as client:
        assert board.login(client).status_code == 303
        stolen = client.cookies.get("loopkit_board")
        assert stolen and client.get("/").status_code == 200
        home = client.get("/", headers={"accept": "text/html"})
        assert client.post("/logout", data={"csrf": csrf_of(home.text)}).status_code == 303
        client.cookies.clear()
        client.cookies.set("loopkit_board", stolen)  # a copy taken before the logout
        assert client.get("/").status_code == 401
        client.cookies.clear()
        assert board.login(client).status_code == 303  # a new login still works
        second = client.cookies.get("loopkit_board")
        assert second and second != stolen and client.get("/").status_code == 200
    with running_board(tmp_path) as board, board.client() as client:
        client.cookies.set("loopkit_board", stolen)
        assert client.get("/").status_code == 401
        client.cookies.set("loopkit_board", second)
        assert client.get("/").status_code == 200
    logouts = tmp_path.glob("**/board-logouts")
    assert [oct(p.stat().st_mode & 0o777) for p in logouts] == ["0o600"]
