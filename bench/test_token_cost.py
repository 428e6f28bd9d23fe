"""Tokens for the delete card, counted the way the providers bill.

The same run (the bundled transcript of the delete card, played for real: files, build, the app,
the UI server, git) is priced twice, request by request:

- loopkit: tool results as plain text (cut above 4,000 characters), Anthropic prompt caching with
  breakpoints on the system prompt + tools and on the latest turn, so each request reads the
  previous request's prompt from the cache and writes only what is new;
- naive: the same conversation with every result JSON-wrapped (an MCP result object, or a JSON
  string for local functions), nothing cut, no caching.

Tokens are counted with litellm's offline tokenizer (o200k via tiktoken's bundled files) over the
messages and the tool schemas of each request. Billed-equivalent input uses Anthropic's prices
relative to plain input: cache writes x1.25, cache reads x0.1. The CardRunner article reports
255,000 input tokens over 20 rounds for this card. Target: loopkit's billed-equivalent input is
at most a quarter of the naive replay's.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.demo.helpers import copy_card, run_demo

from loopkit import ChatMessage, ChatRole, FunctionCallContent, FunctionResultContent, Script
from loopkit.cards.runner import CARD_PREFIX
from loopkit.demo.run import bundled_transcripts, instructions
from loopkit.mcp import MCPClient
from loopkit.providers.litellm_mapping import to_openai_messages, to_openai_tools
from loopkit_tools import LocalTools, ToolsConfig

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
CARD = "delete-asks-for-confirmation"
ARTICLE_INPUT_TOKENS = 255_000
CACHE_WRITE, CACHE_READ = 1.25, 0.1
TOKENIZER_MODEL = "gpt-4o"


def count(messages: list[ChatMessage], tool_schemas: list[dict[str, Any]]) -> int:
    import litellm

    return int(
        litellm.token_counter(
            model=TOKENIZER_MODEL, messages=to_openai_messages(messages), tools=tool_schemas
        )
    )


def naive_text(name: str, result: str, ui_tools: set[str]) -> str:
    if name in ui_tools:  # what an MCP client hands over when nobody converts it
        return json.dumps({"content": [{"type": "text", "text": result}], "isError": False})
    return json.dumps(result)


def conversations(
    card_text: str, script: Script, results: list[str], naive: bool, ui_tools: set[str]
) -> list[list[ChatMessage]]:
    """The message list of every request of the run."""
    messages = [
        ChatMessage.from_text(ChatRole.SYSTEM, instructions()),
        ChatMessage.from_text(ChatRole.USER, CARD_PREFIX + card_text),
    ]
    requests = [list(messages)]
    it = iter(results)
    for n, turn in enumerate(script.turns[:-1], start=1):
        calls = [
            FunctionCallContent(call_id=c.id or f"call_{n}_{i}", name=c.name, arguments=c.arguments)
            for i, c in enumerate(turn.calls, start=1)
        ]
        contents: list[Any] = [
            *([{"type": "text", "text": turn.text}] if turn.text else []),
            *calls,
        ]
        messages.append(ChatMessage.model_validate({"role": "assistant", "contents": contents}))
        answers = []
        for c in calls:
            text = next(it)
            answers.append(
                FunctionResultContent(
                    call_id=c.call_id, result=naive_text(c.name, text, ui_tools) if naive else text
                )
            )
        messages.append(ChatMessage(role=ChatRole.TOOL, contents=answers))
        requests.append(list(messages))
    return requests


async def tool_schemas() -> tuple[list[dict[str, Any]], set[str]]:
    local = LocalTools(ToolsConfig()).tools
    async with MCPClient.stdio(sys.executable, ["-m", "loopkit_ui.server"], inherit_env=True) as ui:
        remote = await ui.list_tools()
    return to_openai_tools([*local, *remote]), {t.name for t in remote}


def test_token_cost_of_the_delete_card(tmp_path: Path) -> None:
    run = run_demo(tmp_path, copy_card(tmp_path, CARD))
    assert run.returncode == 0, run.output
    tool_events = [e["data"] for e in run.events() if e["type"] == "tool"]
    script = Script.load(bundled_transcripts()[CARD])
    assert len(tool_events) == sum(len(t.calls) for t in script.turns)
    results = [e["result"] for e in tool_events]  # exactly what the model was sent
    schemas, ui_tools = asyncio.run(tool_schemas())
    card_text = (Path(__file__).parents[1] / "examples" / "cards" / f"{CARD}.md").read_text()

    plain = [count(m, schemas) for m in conversations(card_text, script, results, False, ui_tools)]
    naive = [count(m, schemas) for m in conversations(card_text, script, results, True, ui_tools)]

    # Anthropic caching with a breakpoint on the latest turn: request k reads request k-1's
    # prompt from the cache and writes the rest.
    cached = [0, *plain[:-1]]
    written = [p - c for p, c in zip(plain, cached, strict=True)]
    billed = sum(written) * CACHE_WRITE + sum(cached) * CACHE_READ
    naive_total = sum(naive)
    ratio = billed / naive_total
    rows = [
        ("rounds", len(plain), len(naive)),
        ("input tokens", sum(plain), naive_total),
        ("  of which cache reads", sum(cached), 0),
        ("  of which cache writes", sum(written), 0),
        ("billed-equivalent input", round(billed), naive_total),
    ]
    print(
        f"\n\ntoken cost of the delete card ({TOKENIZER_MODEL} tokenizer, Anthropic cache prices)"
    )
    print(f"{'':28}{'loopkit':>12}{'naive':>12}")
    for label, ours, theirs in rows:
        print(f"{label:28}{ours:>12,}{theirs:>12,}")
    print(f"plain text alone (no caching): {sum(plain) / naive_total:.2f} of the naive input")
    print(f"billed-equivalent ratio loopkit / naive: {ratio:.3f} (target <= 0.25)")
    print(f"the article's run of this card: {ARTICLE_INPUT_TOKENS:,} input tokens in 20 rounds")
    assert sum(plain) < naive_total  # plain text is never longer than its JSON wrapping
