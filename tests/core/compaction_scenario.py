"""A long scripted run with large tool results, for the compaction test and benchmark.

The model (a :class:`ScriptedChatClient`, strict: it checks every result it gets back) reads one
file per round for ``rounds`` rounds, writing a paragraph of reasoning each time, then answers.
Each file is ``result_chars`` characters, so the conversation grows by about 1,150 tokens a round
and passes a 100k-token window after about 85 rounds. A recorder under the middleware being
measured notes what each request really sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from loopkit import (
    ChatClient,
    ChatClientBuilder,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatRole,
    DelegatingChatClient,
    FunctionChatClient,
    tool,
)
from loopkit.middleware.compaction import estimate_tokens
from loopkit.providers.scripted import Script, ScriptedChatClient
from loopkit.run_context import RunEvent, run_scope

SYSTEM = "You are a careful code reviewer. Read the files one by one and report what you find."
TASK = "Review every module under src/ for unchecked input and report the findings."
WINDOW = 100_000


def file_text(path: str, chars: int) -> str:
    """The deterministic content of a file: a header, then numbered lines up to ``chars``."""
    lines = [f"# {path}"]
    n = 0
    while sum(len(x) + 1 for x in lines) < chars:
        n += 1
        lines.append(f"def handler_{n:03}(request):  return process(request.field_{n:03})")
    return "\n".join(lines)[:chars]


def reasoning(i: int, chars: int) -> str:
    base = (
        f"Module {i:03} looked at. The handlers pass request fields straight to process(); "
        "I note which ones are unchecked and move on to the next module in the list. "
    )
    return (base * (chars // len(base) + 1))[:chars]


def script(rounds: int, text_chars: int) -> Script:
    turns: list[dict[str, object]] = [
        {
            "text": reasoning(i, text_chars),
            "calls": [
                {
                    "name": "read_file",
                    "arguments": {"path": f"src/module_{i:03}.py"},
                    "expect": {"contains": f"# src/module_{i:03}.py"},
                }
            ],
        }
        for i in range(1, rounds + 1)
    ]
    turns.append({"text": f"Reviewed {rounds} modules.\nRESULT: done"})
    return Script.model_validate({"turns": turns})


class Recorder(DelegatingChatClient):
    """Notes each request's estimated input and reported input tokens (and, if asked, its
    messages)."""

    def __init__(self, inner: ChatClient, *, keep_requests: bool = False) -> None:
        super().__init__(inner)
        self.keep_requests = keep_requests
        self.estimates: list[int] = []
        self.reported: list[int] = []
        self.requests: list[list[ChatMessage]] = []
        self.tools: int = 0

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        self.estimates.append(estimate_tokens(messages, options))
        self.tools = estimate_tokens([], options)
        if self.keep_requests:
            self.requests.append(list(messages))
        response = await self.inner.get_response(messages, options)
        self.reported.append(response.usage.input_tokens if response.usage else 0)
        return response


def summarizer() -> FunctionChatClient:
    """Stands in for the model writing summaries (a fixed summary saying what it covered)."""

    def reply(messages: list[ChatMessage], options: ChatOptions | None) -> str:
        covered = messages[-1].text.count("called read_file")
        return (
            f"Read {covered} more modules; their handlers pass request fields to process() "
            "without checks. " * 4
        )

    return FunctionChatClient(reply, model_id="summarizer")


@dataclass
class Outcome:
    recorder: Recorder
    summaries: Recorder  # the summariser's requests
    events: list[RunEvent]
    text: str
    rounds: int


async def run(
    *,
    rounds: int = 300,
    result_chars: int = 4000,
    text_chars: int = 600,
    compaction: bool = True,
    middleware: object | None = None,
    keep_requests: bool = False,
    window: int = WINDOW,
) -> Outcome:
    """Play the scripted run through the loop, with compaction (or ``middleware``) below it."""

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return file_text(path, result_chars)

    model = ScriptedChatClient(script(rounds, text_chars))
    recorder = Recorder(model, keep_requests=keep_requests)
    summaries = Recorder(summarizer())
    builder = ChatClientBuilder(recorder).use_function_invocation(max_rounds=rounds + 10)
    if compaction:
        builder.use_compaction(max_input_tokens=window, summarizer=summaries)
    elif middleware is not None:
        builder.use(middleware)  # type: ignore[arg-type]
    client = builder.build()
    messages = [
        ChatMessage.from_text(ChatRole.SYSTEM, SYSTEM),
        ChatMessage.from_text(ChatRole.USER, TASK),
    ]
    events: list[RunEvent] = []
    with run_scope(name="long-run") as ctx:
        ctx.subscribe(events.append)
        response = await client.get_response(messages, ChatOptions(tools=[read_file]))
    rounds_run = response.additional_properties["rounds"]
    return Outcome(recorder, summaries, events, response.text, rounds_run)
