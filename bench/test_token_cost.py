"""Tokens of every bundled card, counted the way the providers bill.

Each card's bundled transcript is played for real (files, build, the app, the UI server, git), then
the same conversation is priced three ways, request by request:

- now: what the card runner sends today. Progressive tool disclosure: each request offers the
  core tools, ``load_tools`` and the tools loaded so far (appended, never reordered), with
  compacted schemas; tool results as plain text (cut above 4,000 characters); Anthropic prompt
  caching with breakpoints on the last tool, the system prompt and the latest turn (as
  ``LiteLLMChatClient`` places them), so a request reads the previous request's prompt from the
  cache and writes what is new; a request whose tools differ from the previous one's (a load)
  reads nothing and writes its whole prompt again: Anthropic's documented rule (the prompt is
  tools, then system, then messages, and "modifying tool definitions invalidates the entire
  cache"). The look-back reading (a load still reads the unchanged leading tools, through the
  breakpoint the previous request had on its last tool) is printed beside it: it is what the
  cache could do, not what the documentation promises;
- before: the same conversation with every tool offered on every request, full schemas (no
  ``load_tools`` call): what disclosure alone saves, also cached;
- naive: every tool, full schemas, every result JSON-wrapped (an MCP result object, or a JSON
  string for local functions), no caching.

Tokens are counted with litellm's offline tokenizer (o200k via tiktoken's bundled files) over the
messages and the tool schemas of each request. Billed-equivalent input uses Anthropic's prices
relative to plain input: cache writes x1.25, cache reads x0.1. The CardRunner article reports
255,000 input tokens over 20 rounds for the delete card. Goals (issue 15), for every card: raw
input now at most 0.60 of main's before this work (``MAIN_RAW``: whole-file reads and writes,
every tool on every request), billed-equivalent now at most 0.10 of the naive replay of the same
run.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.demo.helpers import CARD_NAMES, copy_card, run_demo

from loopkit import (
    ChatMessage,
    ChatOptions,
    ChatRole,
    FunctionCallContent,
    FunctionChatClient,
    FunctionResultContent,
    Script,
    Tool,
)
from loopkit.cards.config import RunnerConfig
from loopkit.cards.runner import CARD_PREFIX
from loopkit.demo.role_tools import RoleMemory, reference_shelf
from loopkit.demo.run import bundled_transcripts, instructions
from loopkit.mcp import MCPClient
from loopkit.middleware.tool_disclosure import LOAD_TOOLS, ToolDisclosure, ToolDisclosureChatClient
from loopkit.providers.litellm_mapping import to_openai_messages, to_openai_tools
from loopkit_tools import LocalTools, ToolsConfig

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ARTICLE_INPUT_TOKENS = 255_000
#: Raw input tokens of each card on main at 11aa959 (before tool disclosure, edit_file and
#: search_files), priced the same way: its bench/test_token_cost.py over each bundled card.
MAIN_RAW = {
    "delete-asks-for-confirmation": 262_942,
    "total-ignores-the-discount": 116_710,
    "validate-quantity-and-price": 245_679,
}
CACHE_WRITE, CACHE_READ = 1.25, 0.1
TOKENIZER_MODEL = "gpt-4o"


def count(messages: list[ChatMessage], tool_schemas: list[dict[str, Any]]) -> int:
    import litellm

    return int(
        litellm.token_counter(
            model=TOKENIZER_MODEL, messages=to_openai_messages(messages), tools=tool_schemas
        )
    )


def schema_tokens(tools: list[Tool]) -> int:
    """The tokens of ``tools``' schemas alone."""
    stub = [ChatMessage.from_text(ChatRole.USER, "x")]
    return count(stub, to_openai_tools(tools)) - count(stub, [])


def naive_text(name: str, result: str, ui_tools: set[str]) -> str:
    if name in ui_tools:  # what an MCP client hands over when nobody converts it
        return json.dumps({"content": [{"type": "text", "text": result}], "isError": False})
    return json.dumps(result)


def conversations(
    card_text: str,
    script: Script,
    results: list[str],
    ui_tools: set[str],
    *,
    naive: bool = False,
    loads: bool = True,
) -> list[list[ChatMessage]]:
    """The message list of every request of the run; ``naive``: results JSON-wrapped; without
    ``loads``, the ``load_tools`` calls and their answers left out."""
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
        answers = [
            FunctionResultContent(
                call_id=c.call_id, result=naive_text(c.name, text, ui_tools) if naive else text
            )
            for c, text in zip(calls, [next(it) for _ in calls], strict=True)
        ]
        if not loads:  # no disclosure: no load_tools call, nor its answer
            keep = [i for i, c in enumerate(calls) if c.name != LOAD_TOOLS]
            calls, answers = [calls[i] for i in keep], [answers[i] for i in keep]
            if not calls and not turn.text:
                continue
        contents: list[Any] = [
            *([{"type": "text", "text": turn.text}] if turn.text else []),
            *calls,
        ]
        messages.append(ChatMessage.model_validate({"role": "assistant", "contents": contents}))
        if answers:
            messages.append(ChatMessage(role=ChatRole.TOOL, contents=answers))
        requests.append(list(messages))
    return requests


async def all_tools(tmp_path: Path) -> tuple[list[Tool], set[str]]:
    """The develop role's tools, in the order its runner gathers them: the local tools, the UI
    server's, read_reference, the memory's (over an empty ``notes/`` in ``tmp_path``)."""
    import loopkit_tools

    local = LocalTools(ToolsConfig()).tools
    async with MCPClient.stdio(sys.executable, ["-m", "loopkit_ui.server"], inherit_env=True) as ui:
        remote = await ui.list_tools()
    (tmp_path / "repo").mkdir(parents=True, exist_ok=True)
    memory = RoleMemory(loopkit_tools, tmp_path / "repo", tmp_path / "index")
    try:
        notes = list(memory.tools.tools)
    finally:
        memory.close()
    reference = reference_shelf(RunnerConfig()).tool()
    return [*local, *remote, reference, *notes], {t.name for t in remote}


@dataclass
class Priced:
    """One way of sending a run: input tokens per request and what caching makes of them."""

    plain: list[int]
    cached: list[int]

    @property
    def total(self) -> int:
        return sum(self.plain)

    @property
    def written(self) -> int:
        return self.total - sum(self.cached)

    @property
    def billed(self) -> float:
        return self.written * CACHE_WRITE + sum(self.cached) * CACHE_READ


def priced(
    requests: list[list[ChatMessage]],
    offered: list[list[Tool]],
    cache: bool,
    look_back: bool = False,
) -> Priced:
    plain = [count(m, to_openai_tools(t)) for m, t in zip(requests, offered, strict=True)]
    if not cache:
        return Priced(plain, [0] * len(plain))
    # Request k reads request k-1's whole prompt when its tools are the same (the breakpoint on
    # k-1's latest turn). When they differ (a load), Anthropic's documented rule applies: the
    # prompt is tools, then system, then messages, and a change in the tools invalidates the
    # whole cache, so nothing is read and the whole prompt is written again. With ``look_back``
    # (the optimistic reading) a load whose tools only append to the previous ones still reads
    # those leading tools, through the breakpoint the provider put on the previous last tool and
    # the cache's look-back over the blocks before a breakpoint: undocumented for tools.
    cached = [0]
    for k in range(1, len(plain)):
        before, now = [t.name for t in offered[k - 1]], [t.name for t in offered[k]]
        if now == before:
            cached.append(plain[k - 1])
        elif look_back and now[: len(before)] == before:
            cached.append(schema_tokens(offered[k - 1]))
        else:
            cached.append(0)
    return Priced(plain, cached)


def price_card(tmp_path: Path, card: str, tools: list[Tool], ui_tools: set[str]) -> dict[str, Any]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    run = run_demo(tmp_path, copy_card(tmp_path, card))
    assert run.returncode == 0, run.output
    tool_events = [e["data"] for e in run.events() if e["type"] == "tool"]
    script = Script.load(bundled_transcripts()[card])
    assert len(tool_events) == sum(len(t.calls) for t in script.turns)
    results = [e["result"] for e in tool_events]  # exactly what the model was sent
    card_text = (Path(__file__).parents[1] / "examples" / "cards" / f"{card}.md").read_text()

    config = RunnerConfig()
    disclosure = ToolDisclosure(config.core_tools, defer=config.defer_tools)
    shaper = ToolDisclosureChatClient(FunctionChatClient(lambda *_: ""), disclosure)
    options = ChatOptions(tools=disclosure.tools(tools))
    now_requests = conversations(card_text, script, results, ui_tools)
    shown = [shaper.offered(m, options) for m in now_requests]
    now = priced(now_requests, shown, cache=True)
    look_back = priced(now_requests, shown, cache=True, look_back=True)
    names = [[t.name for t in offered] for offered in shown]
    loads = sum(1 for a, b in itertools.pairwise(names) if a != b)
    old_requests = conversations(card_text, script, results, ui_tools, loads=False)
    before = priced(old_requests, [tools] * len(old_requests), cache=True)
    naive_requests = conversations(card_text, script, results, ui_tools, naive=True, loads=False)
    naive = priced(naive_requests, [tools] * len(naive_requests), cache=False)
    assert now.total < before.total < naive.total
    first = now_requests[0]
    bare = count(first, [])
    return {
        "card": card,
        "now": now,
        "look_back": look_back,
        "loads": loads,
        "before": before,
        "naive": naive,
        "schemas_first": count(first, to_openai_tools(shaper.offered(first, options))) - bare,
        "schemas_last": count(first, to_openai_tools(shaper.offered(now_requests[-1], options)))
        - bare,
        "schemas_all": count(first, to_openai_tools(tools)) - bare,
    }


def test_token_cost_of_every_bundled_card(tmp_path: Path) -> None:
    tools, ui_tools = asyncio.run(all_tools(tmp_path / "tools"))
    # The develop role's cards (a role's or a subagent's transcript is played another way)
    cards = sorted(CARD_NAMES)
    assert set(cards) <= set(bundled_transcripts())
    rows = [price_card(tmp_path / card, card, tools, ui_tools) for card in cards]
    print(f"\n\ntoken cost per card ({TOKENIZER_MODEL} tokenizer, Anthropic cache prices)")
    print(
        "| card | rounds | loads | raw now | raw before | now / before | raw on main | now / main "
        "| billed now | billed before | naive | now / naive | look-back / naive | before / naive |"
    )
    for r in rows:
        now, before, naive = r["now"], r["before"], r["naive"]
        main = MAIN_RAW.get(r["card"])
        on_main = f"{main:,} | {now.total / main:.3f}" if main else "- | -"
        print(
            f"| {r['card']} | {len(now.plain)} | {r['loads']} | {now.total:,} | {before.total:,} | "
            f"{now.total / before.total:.3f} | {on_main} | {round(now.billed):,} | "
            f"{round(before.billed):,} | {naive.total:,} | {now.billed / naive.total:.3f} | "
            f"{r['look_back'].billed / naive.total:.3f} | {before.billed / naive.total:.3f} |"
        )
    print()
    for r in rows:
        now = r["now"]
        print(
            f"{r['card']}: now {sum(now.cached):,} cache reads, {now.written:,} cache writes; "
            f"if a load read the unchanged leading tools (look-back): billed "
            f"{round(r['look_back'].billed):,}; "
            f"tool schemas {r['schemas_first']:,} tokens a request at first, "
            f"{r['schemas_last']:,} at the end, {r['schemas_all']:,} with every tool"
        )
    print(
        "goals: raw now <= 0.60 of main's (11aa959), billed now <= 0.10 of the naive replay "
        "of the same run (billed now: a load reads nothing from the cache, Anthropic's "
        "documented rule; look-back: it reads the unchanged leading tools)"
    )
    print(f"the article's run of the delete card: {ARTICLE_INPUT_TOKENS:,} input tokens, 20 rounds")
