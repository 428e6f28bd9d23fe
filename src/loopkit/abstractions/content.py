"""Message and content types: the data that crosses the boundary between a loop and a model.

Each content item is a small pydantic model with a ``type`` discriminator, so a whole conversation
serialises to JSON and back without losing what kind of item each part was.
"""

from __future__ import annotations

import base64
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ChatRole(StrEnum):
    """Who wrote a message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class _Content(BaseModel):
    model_config = ConfigDict(frozen=False, extra="forbid")


class TextContent(_Content):
    """Plain text written by a user, the system or the model."""

    type: Literal["text"] = "text"
    text: str


class FunctionCallContent(_Content):
    """The model asks for a tool to be called."""

    type: Literal["function_call"] = "function_call"
    call_id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    #: Set when the provider sent arguments that were not a JSON object; the loop reports it.
    arguments_error: str | None = None


class FunctionResultContent(_Content):
    """The answer to one :class:`FunctionCallContent`, matched by ``call_id``."""

    type: Literal["function_result"] = "function_result"
    call_id: str
    result: str = ""
    #: True when the tool failed; ``result`` then holds the message the model sees.
    error: bool = False


class DataContent(_Content):
    """Binary data (an image, a file) given inline as bytes or by URI. In JSON the bytes are
    base64 (so is ``data`` given as a ``str``)."""

    # Inline bytes are base64 in JSON (an image is not UTF-8), so a message holding one
    # serialises and reads back (a stored session, the run log, telemetry).
    model_config = ConfigDict(
        frozen=False, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64"
    )

    type: Literal["data"] = "data"
    media_type: str
    data: bytes | None = None
    uri: str | None = None

    def data_uri(self) -> str:
        """The content as a ``data:`` URI (or its ``uri`` when it has no inline bytes)."""
        if self.data is None:
            if self.uri is None:
                raise ValueError("DataContent needs either data or uri")
            return self.uri
        return f"data:{self.media_type};base64,{base64.b64encode(self.data).decode()}"


class UsageDetails(BaseModel):
    """Tokens one or more model calls used, as the provider billed them."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int = 0
    output_tokens: int = 0
    #: Input tokens read from the provider's prompt cache (billed at a fraction).
    cached_input_tokens: int = 0
    #: Input tokens written to the prompt cache (Anthropic bills these at a premium).
    cache_creation_input_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: UsageDetails) -> UsageDetails:
        return UsageDetails(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens
            + other.cache_creation_input_tokens,
        )


class UsageContent(_Content):
    """Usage reported inside a stream of updates."""

    type: Literal["usage"] = "usage"
    usage: UsageDetails


Content = Annotated[
    TextContent | FunctionCallContent | FunctionResultContent | DataContent | UsageContent,
    Field(discriminator="type"),
]


class ChatMessage(BaseModel):
    """One message of a conversation: a role and a list of contents."""

    model_config = ConfigDict(extra="forbid")

    role: ChatRole
    contents: list[Content] = Field(default_factory=list)
    author_name: str | None = None

    @classmethod
    def from_text(cls, role: ChatRole | str, text: str) -> ChatMessage:
        """A message holding one :class:`TextContent`."""
        return cls(role=ChatRole(role), contents=[TextContent(text=text)])

    @property
    def text(self) -> str:
        """The concatenated text of all text contents."""
        return "".join(c.text for c in self.contents if isinstance(c, TextContent))

    @property
    def function_calls(self) -> list[FunctionCallContent]:
        return [c for c in self.contents if isinstance(c, FunctionCallContent)]

    @property
    def function_results(self) -> list[FunctionResultContent]:
        return [c for c in self.contents if isinstance(c, FunctionResultContent)]
