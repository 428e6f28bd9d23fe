"""An :class:`~loopkit.agents.Agent` as an MCP tool (official ``mcp`` SDK 2.x ``MCPServer``).

The server offers one tool, named after the agent (or ``tool_name``):

- its input is ``prompt`` (a string), or, with ``input_type=`` a pydantic model, that model's
  fields (the agent receives them as JSON);
- its output is the agent's output as ``structuredContent``, described by the tool's
  ``outputSchema`` (a pydantic output type as it is; any other type, text included, as
  ``{"result": ...}``), with the same as text for clients that read text;
- each round of the run is a progress notification (``progress`` = the round, ``total`` = the
  agent's ``max_rounds``, and a message naming the tools it called), when the client asked
  for progress (a ``progressToken``);
- a run that fails is an error result naming why (the budget spent, an invalid output, ...).

Each call is a run of its own: nothing is kept between calls.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, Field, TypeAdapter, create_model

from loopkit.agents.events import FinalResult, RoundFinished, ToolCallStarted
from loopkit.agents.output import OutputSpec
from loopkit.errors import LoopkitError, describe_error

if TYPE_CHECKING:
    from mcp.server.auth.provider import TokenVerifier
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer

    from loopkit.agents.agent import Agent

__all__ = ["agent_mcp_server", "output_model"]


def output_model(agent: Agent[Any]) -> type[BaseModel]:
    """The model of the tool's ``structuredContent``: the agent's output type when it is a
    pydantic model, else ``{"result": <output type>}``."""
    output = agent.output_type
    if isinstance(output, type) and issubclass(output, BaseModel):
        return output
    name = "".join(part.capitalize() for part in agent.name.replace("-", "_").split("_"))
    model: type[BaseModel] = create_model(f"{name or 'Agent'}Output", result=(output, ...))
    return model


def agent_mcp_server(
    agent: Agent[Any],
    *,
    tool_name: str | None = None,
    description: str | None = None,
    input_type: type[BaseModel] | None = None,
    server_name: str | None = None,
    auth: AuthSettings | None = None,
    token_verifier: TokenVerifier | None = None,
) -> MCPServer:
    """An ``MCPServer`` offering ``agent`` as one tool (see the module docs). ``auth`` and
    ``token_verifier`` (the SDK's hooks) make its HTTP app require a bearer token."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp_types import CallToolResult, TextContent

    from loopkit import __version__

    if input_type is not None and not (
        isinstance(input_type, type) and issubclass(input_type, BaseModel)
    ):
        raise TypeError(f"input_type must be a pydantic model class, got {input_type!r}")
    name = tool_name or agent.name
    spec: OutputSpec[Any] = OutputSpec(agent.output_type)
    model = output_model(agent)
    wraps = model is not agent.output_type
    adapter: TypeAdapter[Any] = TypeAdapter(agent.output_type)
    max_rounds = int(agent.limits.get("max_rounds") or 0) or None

    async def run_agent(ctx: Context, **arguments: Any) -> Any:
        if input_type is None:
            prompt = str(arguments["prompt"])
        else:
            prompt = input_type.model_validate(arguments).model_dump_json()
        result = None
        called: list[str] = []
        try:
            async for event in agent.run_stream(prompt, metadata={"mcp_tool": name}):
                if isinstance(event, ToolCallStarted):
                    called.append(event.call.name)
                elif isinstance(event, RoundFinished):
                    what = f"called {', '.join(called)}" if called else "answered"
                    await ctx.report_progress(
                        event.round, max_rounds, message=f"round {event.round}: {what}"
                    )
                    called = []
                elif isinstance(event, FinalResult):
                    result = event.result
        except LoopkitError as e:
            return CallToolResult(
                content=[TextContent(type="text", text=f"the agent failed: {describe_error(e)}")],
                is_error=True,
            )
        assert result is not None  # a stream that ends without raising ends with FinalResult
        dumped = adapter.dump_python(result.output, mode="json")
        structured = {"result": dumped} if wraps else dumped
        text = spec.serialise(result.output)
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=structured
        )

    parameters = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    if input_type is None:
        parameters.append(
            inspect.Parameter(
                "prompt",
                inspect.Parameter.KEYWORD_ONLY,
                annotation=Annotated[
                    str, Field(description="The task, with everything the agent needs to do it.")
                ],
            )
        )
    else:
        for field_name, field in input_type.model_fields.items():
            default = inspect.Parameter.empty if field.is_required() else field.default
            annotation: Any = field.annotation
            if field.description:
                annotation = Annotated[annotation, Field(description=field.description)]
            keyword = inspect.Parameter.KEYWORD_ONLY
            parameters.append(
                inspect.Parameter(field_name, keyword, annotation=annotation, default=default)
            )
    returns = Annotated[CallToolResult, model]
    run_agent.__signature__ = inspect.Signature(parameters, return_annotation=returns)  # type: ignore[attr-defined]
    run_agent.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": returns}

    server: MCPServer = MCPServer(
        name=server_name or f"loopkit-agent-{agent.name}",
        version=__version__,
        auth=auth,
        token_verifier=token_verifier,
        instructions=agent.instructions,
    )
    server.add_tool(
        run_agent,
        name=name,
        title=f"Ask the {agent.name} agent",
        description=description or agent.instructions or f"Ask the {agent.name} agent.",
        structured_output=True,
    )
    return server
