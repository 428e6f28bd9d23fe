"""Tools: the ``Tool`` protocol, and ``FunctionTool`` / ``@tool`` for plain functions.

Importing this module (and decorating a function with ``@tool``) loads neither pydantic nor
asyncio: a tool reads its signature and docstring when it is made (a bad signature is refused
then), and builds its pydantic argument model and JSON schema once, on first use (its
:attr:`~FunctionTool.parameters`, or its first call from a model). A program that only names the
core of loopkit stays quick to start.
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Awaitable, Callable
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Generic,
    Protocol,
    get_args,
    get_origin,
    overload,
    runtime_checkable,
)

from loopkit.errors import KeepsFieldsWhenPickled

if TYPE_CHECKING:
    from pydantic import BaseModel

    # typing_extensions (a dependency of pydantic) for PEP 696 defaults: a bare ``FunctionTool``
    # annotation means ``FunctionTool[..., Any]`` and passes ``mypy --strict``.
    from typing_extensions import ParamSpec, TypeVar

    from loopkit.abstractions.simple_arguments import Parameter

    #: The wrapped function's parameters and return type (what a direct call type-checks against).
    P = ParamSpec("P", default=...)
    R = TypeVar("R", covariant=True, default=Any)
else:
    # At run time the defaults serve nobody, and importing typing_extensions costs milliseconds.
    from typing import ParamSpec, TypeVar

    P = ParamSpec("P")
    R = TypeVar("R", covariant=True)
_P = ParamSpec("_P")
_R = TypeVar("_R")

# One lock for every tool's first build: builds are rare (once a tool) and short; reentrant, in
# case building one tool's model reads another tool (a type with its own schema hook).
_BUILD_LOCK = threading.RLock()


class ToolError(KeepsFieldsWhenPickled, Exception):
    """A failure the model should read: its message becomes the tool result, always in full."""


class ToolArgumentsError(ToolError):
    """The model's arguments did not fit the tool's schema."""


@runtime_checkable
class Tool(Protocol):
    """Something a model can call: a name, a description, a JSON schema and an async ``invoke``.

    ``invoke`` returns anything printable; the loop turns it into plain text for the model. Raise
    :class:`ToolError` for a failure the model should see and can act on.
    """

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> dict[str, Any]:
        """A JSON schema of type ``object`` for the arguments."""
        ...

    async def invoke(self, arguments: dict[str, Any]) -> Any: ...


_ARGS_HEADER = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:\s*$", re.IGNORECASE)
_SECTION_HEADER = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")
_GOOGLE_PARAM = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_REST_PARAM = re.compile(r"^:param\s+(?:[\w\[\], ]+\s+)?(\w+)\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google- or reST-style docstring into (description, {parameter: description})."""
    if not doc:
        return "", {}
    summary: list[str] = []
    params: dict[str, str] = {}
    current: str | None = None
    section = "summary"  # summary | args | other
    param_indent: int | None = None
    for line in inspect.cleandoc(doc).splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        rest = _REST_PARAM.match(stripped)
        if rest:
            section, current = "rest", rest.group(1)
            params[current] = rest.group(2).strip()
            continue
        if indent == 0 and _ARGS_HEADER.match(stripped):
            section, current, param_indent = "args", None, None
            continue
        if indent == 0 and (_SECTION_HEADER.match(stripped) or stripped.startswith(":")):
            section, current = "other", None
            continue
        if section == "summary":
            summary.append(line)
        elif section == "args" and stripped:
            m = _GOOGLE_PARAM.match(stripped)
            if m and (param_indent is None or indent <= param_indent):
                param_indent = indent
                current = m.group(1).lstrip("*")
                params[current] = m.group(2).strip()
            elif current:
                params[current] = f"{params[current]} {stripped}".strip()
        elif section == "rest" and current and stripped:
            params[current] = f"{params[current]} {stripped}".strip()
    return "\n".join(summary).strip(), params


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's ``title`` noise; models read fewer tokens and lose nothing."""

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: walk(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))
            }
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    cleaned: dict[str, Any] = walk(schema)
    cleaned.setdefault("properties", {})
    return cleaned


class FunctionTool(Generic[P, R]):
    """A Python function (sync or async) as a :class:`Tool`.

    The JSON schema comes from the signature: types, defaults, ``Annotated[..., "description"]``
    or ``Annotated[..., Field(description=...)]``, and the docstring (its first part describes the
    tool, its ``Args:`` section the parameters). Arguments are validated by pydantic before the
    call; a failure raises :class:`ToolArgumentsError` whose message tells the model what was
    wrong. Sync functions run in a worker thread so they never block the event loop.

    Making a tool reads the signature and refuses what cannot be a tool (``*args``/``**kwargs``,
    type hints that do not resolve) at once; the pydantic model behind the schema and the
    validation is built on first use (:attr:`parameters` or :meth:`validate`), once, so that
    ``@tool`` at import time costs no pydantic import. A parameter type pydantic cannot describe
    raises a ``TypeError`` naming the tool then.

    The tool is generic in the function's signature: calling it directly (``add(1, 2)``) type-checks
    exactly like calling the function, and returns what the function returns (a coroutine for an
    ``async def``).
    """

    __slots__ = (
        "__wrapped__",
        "_doc_params",
        "_fn",
        "_hints",
        "_is_async",
        "_model",
        "_schema",
        "_validate",
        "description",
        "name",
        "run_in_thread",
    )

    def __init__(
        self,
        fn: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        run_in_thread: bool = True,
    ) -> None:
        if isinstance(fn, FunctionTool):  # re-wrapping a tool (to rename it): its function
            fn = fn.__wrapped__
        self._fn: Callable[P, R] = fn
        #: The function, for ``inspect.signature`` and ``inspect.unwrap``.
        self.__wrapped__: Callable[P, R] = fn
        self._is_async = inspect.iscoroutinefunction(fn)
        self.run_in_thread = run_in_thread
        self.name = name or fn.__name__
        doc_text, self._doc_params = parse_docstring(inspect.getdoc(fn))
        self.description = description if description is not None else doc_text
        self._hints = self._check_signature(fn)
        self._model: type[BaseModel] | None = None
        self._schema: dict[str, Any] | None = None
        self._validate: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    @staticmethod
    def from_function(
        fn: Callable[_P, _R],
        *,
        name: str | None = None,
        description: str | None = None,
        run_in_thread: bool = True,
    ) -> FunctionTool[_P, _R]:
        """Build a tool from ``fn``; keyword arguments as for the constructor."""
        return FunctionTool(fn, name=name, description=description, run_in_thread=run_in_thread)

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments (built on first use)."""
        schema = self._schema
        if schema is None:
            self._build()
            schema = self._schema
            assert schema is not None
        return schema

    def _check_signature(self, fn: Callable[..., Any]) -> dict[str, Any]:
        """The resolved type hints; a ``TypeError`` for what cannot be a tool (no pydantic)."""
        try:
            hints = inspect.get_annotations(fn, eval_str=True)
        except Exception as e:  # an annotation that cannot be resolved
            raise TypeError(f"tool {self.name!r}: cannot resolve type hints: {e}") from e
        for pname, param in inspect.signature(fn).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(
                    f"tool {self.name!r}: parameter {pname!r} is *args/**kwargs; "
                    "tools need named parameters so the model knows what to send"
                )
        return hints

    def _build(self) -> Callable[[dict[str, Any]], dict[str, Any]]:
        """The argument check and the schema, made once (the first caller builds them):
        without a model for simple parameters (:mod:`loopkit.abstractions.simple_arguments`,
        microseconds), else the pydantic model (milliseconds)."""
        with _BUILD_LOCK:
            if self._validate is None:
                from loopkit.abstractions.simple_arguments import simple_arguments

                parameters = self._parameter_list()
                simple = simple_arguments(parameters)
                if simple is not None:
                    self._validate, self._schema = simple
                    return self._validate
                model = self._build_model(parameters)
                try:
                    schema = _clean_schema(model.model_json_schema())
                except Exception as e:  # a type pydantic validates but cannot describe
                    raise TypeError(
                        f"tool {self.name!r}: the arguments have no JSON schema: {e}"
                    ) from e

                def validate(arguments: dict[str, Any]) -> dict[str, Any]:
                    parsed = model.model_validate(arguments)
                    return {k: getattr(parsed, k) for k in type(parsed).model_fields}

                self._model, self._schema, self._validate = model, schema, validate
            return self._validate

    def _parameter_list(self) -> list[Parameter]:
        """The parameters with their types, defaults and descriptions (``Annotated`` strings
        and the docstring's ``Args:``)."""
        from loopkit.abstractions.simple_arguments import Parameter

        found = []
        for pname, param in inspect.signature(self._fn).parameters.items():
            annotation = self._hints.get(pname, Any)
            description = self._doc_params.get(pname)
            origin: object = get_origin(annotation)
            if origin is Annotated:
                base, *meta = get_args(annotation)
                extra = [m for m in meta if not isinstance(m, str)]
                texts = [m for m in meta if isinstance(m, str)]
                if texts:
                    description = texts[0]
                annotation = Annotated[(base, *extra)] if extra else base
            default = ... if param.default is param.empty else param.default
            found.append(Parameter(pname, annotation, default, description))
        return found

    def _build_model(self, parameters: list[Parameter]) -> type[BaseModel]:
        from pydantic import ConfigDict, Field, create_model
        from pydantic.fields import FieldInfo

        fields: dict[str, Any] = {}
        for pname, annotation, default, description in parameters:
            if isinstance(default, FieldInfo):
                info = default
            elif description is not None:
                info = Field(default=default, description=description)
            else:
                info = Field(default=default)
            fields[pname] = (annotation, info)
        model_name = "".join(p.capitalize() for p in self.name.split("_")) + "Arguments"
        try:
            model: type[BaseModel] = create_model(
                model_name, __config__=ConfigDict(extra="forbid"), **fields
            )
        except Exception as e:  # e.g. a parameter type pydantic knows nothing about
            raise TypeError(f"tool {self.name!r}: cannot validate its arguments: {e}") from e
        return model

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check ``arguments`` against the schema; return them converted to the declared types."""
        check = self._validate or self._build()
        try:
            return check(arguments)
        except ValueError as e:  # pydantic's ValidationError is a ValueError
            from pydantic import ValidationError

            if not isinstance(e, ValidationError):
                raise
            problems = []
            for err in e.errors():
                where = ".".join(str(p) for p in err["loc"]) or "(arguments)"
                problems.append(f"{where}: {err['msg']}")
            expected = ", ".join(
                f"{k} ({v.get('type', 'any')})" for k, v in self.parameters["properties"].items()
            )
            raise ToolArgumentsError(
                f"invalid arguments for {self.name}: "
                + "; ".join(problems)
                + f". Expected: {expected or 'no arguments'}."
            ) from None

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        kwargs = self.validate(arguments)
        # Validated by name against the signature: P's static shape is not needed here.
        fn: Callable[..., Any] = self._fn
        if self._is_async:
            return await fn(**kwargs)
        if self.run_in_thread:
            import asyncio  # loaded already: this runs in an event loop

            return await asyncio.to_thread(fn, **kwargs)
        result = fn(**kwargs)
        if inspect.isawaitable(result):
            return await result
        return result

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the wrapped function directly (the decorator keeps functions usable)."""
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"FunctionTool({self.name!r})"


@overload
def tool(fn: Callable[_P, _R], /) -> FunctionTool[_P, _R]: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None, run_in_thread: bool = True
) -> Callable[[Callable[_P, _R]], FunctionTool[_P, _R]]: ...


def tool(
    fn: Callable[_P, _R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    run_in_thread: bool = True,
) -> FunctionTool[_P, _R] | Callable[[Callable[_P, _R]], FunctionTool[_P, _R]]:
    """Decorator: turn a function into a :class:`FunctionTool`, bare (``@tool``) or with settings
    (``@tool(name=..., description=...)``). The result still calls like the function.

    Example::

        @tool
        def add(a: int, b: Annotated[int, "the second number"] = 1) -> int:
            \"\"\"Add two numbers.\"\"\"
            return a + b

        add(1, 2)  # 3, type-checked as add(a: int, b: int = 1) -> int
    """
    if fn is not None:
        return FunctionTool(fn, name=name, description=description, run_in_thread=run_in_thread)

    def wrap(f: Callable[_P, _R]) -> FunctionTool[_P, _R]:
        return FunctionTool(f, name=name, description=description, run_in_thread=run_in_thread)

    return wrap


ToolFunction = Callable[..., Any] | Callable[..., Awaitable[Any]]
