"""Message and content types: the data that crosses the boundary between a loop and a model.

Each content item is a small pydantic model with a ``type`` discriminator, so a whole conversation
serialises to JSON and back without losing what kind of item each part was.

Messages and contents may be changed in place (a field assigned, a message's ``contents`` list
or a call's ``arguments`` edited). Every such change moves a stamp (:func:`edit_count`, see
:mod:`loopkit.abstractions.watched`), so that a cache of work done per message (a provider's
request format, a token estimate) knows when it must look again, instead of re-reading the whole
history on every request.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from loopkit.abstractions.watched import (
    WatchedDict,
    WatchedList,
    edit_count,
    mark_edited,
    watched,
)

__all__ = [
    "ChatMessage",
    "ChatRole",
    "Content",
    "ContentList",
    "DataContent",
    "FunctionCallContent",
    "FunctionResultContent",
    "RoleName",
    "TextContent",
    "UsageContent",
    "UsageDetails",
    "edit_count",
]


class ContentList(WatchedList):
    """A message's contents: a :class:`~loopkit.abstractions.watched.WatchedList` (a ``list``
    that stamps its in-place changes). It is made when a message is validated (as pydantic
    copies the list anyway), assigned or copied."""

    __slots__ = ()


class ChatRole(StrEnum):
    """Who wrote a message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


#: A role written as a string (``ChatMessage(role="assistant", ...)``); stored as a ChatRole.
RoleName = Literal["system", "user", "assistant", "tool"]


class _Content(BaseModel):
    model_config = ConfigDict(frozen=False, extra="forbid", defer_build=True)
    #: Fields holding plain data (dicts, lists) that are stored as watched copies.
    _watched_fields: ClassVar[tuple[str, ...]] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._watched_fields:
            value = watched(value)
        super().__setattr__(name, value)
        mark_edited()

    def _watch_fields(self) -> Self:
        for name in self._watched_fields:
            value = self.__dict__.get(name)
            if value is not None:
                self.__dict__[name] = watched(value)
        return self

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy (see pydantic); plain data given in ``update`` is stored watched."""
        return super().model_copy(update=update, deep=deep)._watch_fields()

    @classmethod
    def model_construct(cls, _fields_set: set[str] | None = None, **values: Any) -> Self:
        """An unvalidated content (see pydantic), its plain data watched."""
        return super().model_construct(_fields_set, **values)._watch_fields()


class TextContent(_Content):
    """Plain text written by a user, the system or the model."""

    type: Literal["text"] = "text"
    text: str


class FunctionCallContent(_Content):
    """The model asks for a tool to be called."""

    type: Literal["function_call"] = "function_call"
    _watched_fields: ClassVar[tuple[str, ...]] = ("arguments",)

    call_id: str
    name: str
    #: A watched dict (:mod:`loopkit.abstractions.watched`): in-place changes are seen.
    arguments: Annotated[dict[str, Any], AfterValidator(watched)] = Field(
        default_factory=WatchedDict
    )
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
        frozen=False,
        extra="forbid",
        ser_json_bytes="base64",
        val_json_bytes="base64",
        defer_build=True,
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

    model_config = ConfigDict(extra="forbid", defer_build=True)

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
    """One message of a conversation: a role and a list of contents.

    ``contents`` is a :class:`ContentList` (a ``list``): construction, assignment and
    ``model_copy(update=...)`` store a copy of the list given, as validation always did.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    role: ChatRole
    contents: Annotated[list[Content], AfterValidator(ContentList)] = Field(
        default_factory=ContentList
    )
    author_name: str | None = None

    if TYPE_CHECKING:
        # What a type checker sees: the role as a ChatRole or its string ("assistant"), any
        # sequence of contents. (At run time pydantic validates both, as always.)
        def __init__(
            self,
            *,
            role: ChatRole | RoleName,
            contents: Sequence[Content] = ...,
            author_name: str | None = None,
        ) -> None: ...

    else:

        def __init__(self, *args: Any, **data: Any) -> None:
            if args or "content" in data or "text" in data:
                raise TypeError(
                    "ChatMessage takes keywords role= and contents= (a list of contents), e.g. "
                    "ChatMessage(role='user', contents=[TextContent(text='Hi')]), or use "
                    "ChatMessage.from_text('user', 'Hi')"
                )
            self.__pydantic_validator__.validate_python(data, self_instance=self)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "contents" and type(value) is not ContentList:
            value = ContentList(value)
        super().__setattr__(name, value)
        mark_edited()

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy (see pydantic); a ``contents`` given in ``update`` is stored as a
        :class:`ContentList` copy."""
        copied = super().model_copy(update=update, deep=deep)
        contents = copied.__dict__.get("contents")
        if type(contents) is not ContentList:
            copied.__dict__["contents"] = ContentList(contents or ())
        return copied

    @classmethod
    def model_construct(cls, _fields_set: set[str] | None = None, **values: Any) -> Self:
        """An unvalidated message (see pydantic), its ``contents`` a :class:`ContentList`."""
        made = super().model_construct(_fields_set, **values)
        contents = made.__dict__.get("contents")
        if type(contents) is not ContentList:
            made.__dict__["contents"] = ContentList(contents or ())
        return made

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
