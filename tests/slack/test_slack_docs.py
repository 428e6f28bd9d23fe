"""docs/slack.md's app manifest is valid YAML and asks for what the bot uses: socket mode, the
message events it handles, the scopes of the Web API methods it calls (and no others)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

DOC = Path(__file__).resolve().parents[2] / "docs" / "slack.md"


def test_the_manifest_matches_what_the_bot_does() -> None:
    text = DOC.read_text(encoding="utf-8")
    (block,) = re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)
    manifest = yaml.safe_load(block)
    settings = manifest["settings"]
    assert settings["socket_mode_enabled"] is True
    assert "request_url" not in settings["event_subscriptions"]  # nothing public
    events = set(settings["event_subscriptions"]["bot_events"])
    assert events == {"message.channels", "message.groups", "message.im"}
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    # chat.postMessage, files_upload_v2, and the history scope of each message event
    assert scopes == {
        "chat:write",
        "files:write",
        "channels:history",
        "groups:history",
        "im:history",
    }
    assert manifest["features"]["app_home"]["messages_tab_enabled"] is True  # DMs
