"""litellm is imported lazily: never by ``import loopkit``, and with offline defaults."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def run(code: str, env: dict[str, str] | None = None) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_")}
    completed = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **(env or {})},
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_import_loopkit_does_not_import_litellm() -> None:
    result = run(
        "import json, sys\n"
        "import loopkit, loopkit.providers, loopkit.providers.litellm\n"
        "from loopkit import LiteLLMChatClient\n"
        "c = LiteLLMChatClient('anthropic/claude-sonnet-4-5')\n"
        "print(json.dumps({'litellm': 'litellm' in sys.modules,"
        " 'openai': 'openai' in sys.modules}))"
    )
    assert result == {"litellm": False, "openai": False}


def test_background_import_sets_offline_defaults_and_loads() -> None:
    result = run(
        "import json, os, sys\n"
        "from loopkit.providers.litellm import start_background_import, litellm_loaded\n"
        "t = start_background_import()\n"
        "assert start_background_import() is t\n"
        "t.join(120)\n"
        "print(json.dumps({'loaded': litellm_loaded(), 'in_modules': 'litellm' in sys.modules,"
        " 'cost_map': os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP'),"
        " 'offline': os.environ.get('LITELLM_OFFLINE_MODE')}))"
    )
    assert result == {"loaded": True, "in_modules": True, "cost_map": "True", "offline": "true"}


def test_existing_environment_wins_over_offline_defaults() -> None:
    result = run(
        "import json, os\n"
        "from loopkit.providers.litellm import load_litellm\n"
        "load_litellm()\n"
        "print(json.dumps({'offline': os.environ.get('LITELLM_OFFLINE_MODE')}))",
        env={"LITELLM_OFFLINE_MODE": "false"},
    )
    assert result == {"offline": "false"}
