"""A model completes a step of a card using refs only: the invoice app's Notes field has no id
and shares its name with its label, so neither ``target="NoteInput"`` nor a name reaches it;
its ref from ``ui_snapshot`` does.

python examples/ui_refs_step.py          # a scripted model plays the model's side (no key)
python examples/ui_refs_step.py MODEL    # a real model via litellm (anthropic/claude-sonnet-4-5)

It starts a private headless desktop, the UI server (which launches the invoice app) and an
agent with the server's tools. The scripted model checks every answer it gets (strict), so the
run fails if a ref or an answer differs from what it expects.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from loopkit import Agent, ChatClient, LiteLLMChatClient, Script, ScriptedChatClient
from loopkit.mcp import MCPClient
from loopkit_ui import HeadlessDesktop

EXAMPLES = Path(__file__).resolve().parent
TASK = (
    "In the invoice app, write 'Thank you!' into the note to the customer, check the character "
    "count shows 10, then clear the notes and check the field is empty. Use ui_snapshot and act "
    "by ref. End with RESULT: done or RESULT: failed: <reason>."
)

# What a model does: look (refs), type into the field by its ref, click Clear by its ref, read.
SCRIPTED_MODEL = Script.model_validate(
    {
        "turns": [
            {"calls": [{"name": "ui_snapshot", "arguments": {}, "expect": {"contains": [
                "text 'Note to the customer' = '' [ref=e27]",
                "push button 'Clear notes' [ref=e31]"]}}]},
            {"calls": [{"name": "ui_type_text",
                        "arguments": {"target": "e27", "text": "Thank you!"},
                        "expect": {"json": {"success": True}, "contains": "'10 characters'"}}]},
            {"calls": [{"name": "ui_click", "arguments": {"target": "e31"},
                        "expect": {"json": {"success": True}, "contains": "'0 characters'"}}]},
            {"calls": [{"name": "ui_get_text", "arguments": {"target": "e27"},
                        "expect": {"equals": ""}}]},
            {"text": "The note took 'Thank you!' (10 characters) and Clear notes emptied it.\n"
                     "RESULT: done"},
        ]
    }
)  # fmt: skip


async def main(model_name: str | None) -> str:
    model: ChatClient = (
        LiteLLMChatClient(model_name) if model_name else ScriptedChatClient(SCRIPTED_MODEL)
    )
    with HeadlessDesktop() as desktop:
        server = MCPClient.stdio(
            sys.executable,
            ["-m", "loopkit_ui.server", "--launch", f"{sys.executable} -m invoice_app",
             "--launch-cwd", str(EXAMPLES), "--attach-timeout", "20"],
            env=desktop.child_env(),
        )  # fmt: skip
        async with server:
            tools = await server.list_tools()
            agent = Agent(model, tools=tools, max_rounds=12)
            result = await agent.run(TASK)
    print(result.output)
    return result.output


if __name__ == "__main__":
    output = asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else None))
    sys.exit(0 if output.rstrip().endswith("RESULT: done") else 1)
