"""How fast the bot answers, against the fake Slack (not a test: run it by hand).

    PYTHONPATH=src:. python -m tests.slack.measure_latency

Prints the time from the bot's start to its socket-mode connection, from a message to the
answer of an unknown command (10 messages), and from a run request to the "queued" answer
(three cards; the enqueue goes to DBOS on SQLite). No worker runs: the runs stay queued.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

from tests.slack.conftest import ALLOWED, ROLE, ROOT, BotProcess, bot_env, write_bot_config
from tests.slack.fake_slack import FakeSlack

CARDS = (
    "delete-asks-for-confirmation",
    "total-ignores-the-discount",
    "validate-quantity-and-price",
)


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="slack-latency-"))
    try:
        with FakeSlack() as slack:
            started = time.monotonic()
            bot = BotProcess(tmp, slack, write_bot_config(tmp, slack), bot_env(tmp))
            print(f"bot start to socket connected: {time.monotonic() - started:.2f} s")
            waits = []
            for i in range(10):
                sent = time.monotonic()
                ts = slack.send_message(ALLOWED, f"hello {i}", channel="D0DM")
                slack.wait_post(ts, "is not a role")
                waits.append((time.monotonic() - sent) * 1000)
            print(
                f"unknown command, message to answer: median {statistics.median(waits):.1f} ms,"
                f" max {max(waits):.1f} ms"
            )
            waits = []
            for name in CARDS:
                card = tmp / f"{name}.md"
                shutil.copy(ROOT / "examples" / "cards" / f"{name}.md", card)
                sent = time.monotonic()
                ts = slack.send_message(ALLOWED, f"{ROLE} {card}", channel="D0DM")
                slack.wait_post(ts, "queued, position")
                waits.append((time.monotonic() - sent) * 1000)
            print("run request, message to queued answer:", ", ".join(f"{w:.0f} ms" for w in waits))
            bot.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
