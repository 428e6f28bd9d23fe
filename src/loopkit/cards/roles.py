"""Roles: a role is a Markdown file, front matter for what it gets and its body for instructions.

A role file looks like this::

    ---
    name: document
    description: Write or update the user documentation of the card's feature.
    tools: [files, build_app, git, ui, memory]
    writes: [docs]
    limits:
      max_rounds: 40
    success_word: done
    ---
    You are a technical writer ...

``tools`` names the tool groups the model is offered (only those; :data:`TOOL_GROUPS`), ``writes``
the folders of the repository its file tools may write (``{app}`` is the app's folder), ``limits``
override the run's defaults, ``success_word`` is the word of its successful RESULT line
(``RESULT: done`` for most roles, ``RESULT: passed`` for a tester), ``rules_scope`` the scope of the
feedback rules it reads (default: its name), ``verify: true`` makes the run prove every acceptance
criterion before its ``RESULT: done`` counts (evidence and a replay: docs/cards.md), and
``card_state`` is the card's state while the role runs (``In Work``; a tester's ``In Test``).

A :class:`RoleCatalog` finds roles in folders, the first folder that has a role winning: the
user's own roles folder before the bundled roles, so a user role overrides a bundled one of the
same name. Every problem is a :class:`RoleError` naming the file and the field.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from loopkit.cards.markdown_folders import MarkdownFolders
from loopkit.errors import LoopkitError, describe_validation_error

__all__ = [
    "APP_FOLDER",
    "NAME_PATTERN",
    "TOOL_GROUPS",
    "Role",
    "RoleCatalog",
    "RoleError",
    "RoleFrontMatter",
    "RoleLimits",
    "ToolGroup",
    "load_role",
    "parse_role",
]

#: The tool groups a role can name: file tools, build and start the app, git, the UI server's
#: tools, the memory (notes, feedback rules, glossary), the tester's record (steps, findings,
#: regression scripts, the HTML report), the id fixer (a subagent that adds missing accessible ids
#: in the source: ``fix_missing_ids``).
ToolGroup = Literal["files", "build_app", "git", "ui", "memory", "tester", "id_fixer"]
TOOL_GROUPS: tuple[str, ...] = ("files", "build_app", "git", "ui", "memory", "tester", "id_fixer")
#: In ``writes``: the app's folder in the repository (``invoice_app`` in the demo).
APP_FOLDER = "{app}"
#: A role's name (and a rules scope): lowercase letters, digits and '-', starting with a letter.
NAME_PATTERN = r"[a-z][a-z0-9-]{0,31}"
#: A role file larger than this is not a role file.
MAX_ROLE_BYTES = 256 * 1024

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_NAME = re.compile(NAME_PATTERN)
_FOLDER = re.compile(r"[A-Za-z0-9_.{}][A-Za-z0-9_.{}/-]*")


class RoleError(LoopkitError):
    """A role file is not valid, or a role name is unknown."""


class RoleLimits(BaseModel):
    """The role's own limits; a limit not given is the run's setting."""

    model_config = ConfigDict(extra="forbid")

    max_rounds: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_output_tokens: int | None = Field(default=None, ge=1)

    def given(self) -> dict[str, int]:
        """The limits this role sets, by name."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class RoleFrontMatter(BaseModel):
    """A role file's front matter."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    tools: list[ToolGroup]
    writes: list[str] = Field(default_factory=lambda: [APP_FOLDER])
    limits: RoleLimits = Field(default_factory=RoleLimits)
    success_word: str = "done"
    rules_scope: str | None = None
    #: The run must prove each acceptance criterion (record_evidence, checked by the runner, and
    #: a replay on a fresh app) before its RESULT: done counts (loopkit.cards.verification).
    verify: bool = False
    #: The card's state while a run of this role runs (a tester's: In Test).
    card_state: Literal["In Work", "In Test"] = "In Work"

    @field_validator("name", "rules_scope")
    @classmethod
    def _a_name(cls, value: str | None) -> str | None:
        if value is not None and not _NAME.fullmatch(value):
            raise ValueError(
                f"{value!r} is not a name: lowercase letters, digits and '-', starting with a "
                "letter, at most 32 characters"
            )
        return value

    @field_validator("description")
    @classmethod
    def _one_line(cls, value: str) -> str:
        value = " ".join(value.split())
        if not value:
            raise ValueError("the description must not be empty")
        return value

    @field_validator("tools")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        twice = sorted({g for g in value if value.count(g) > 1})
        if twice:
            raise ValueError(f"a group is named twice: {', '.join(twice)}")
        return value

    @field_validator("writes")
    @classmethod
    def _folders(cls, value: list[str]) -> list[str]:
        for folder in value:
            parts = folder.strip("/").split("/")
            if not _FOLDER.fullmatch(folder) or ".." in parts or "." in parts:
                raise ValueError(
                    f"{folder!r} is not a folder of the repository: a relative path without "
                    f"'..', e.g. 'docs' or '{APP_FOLDER}'"
                )
        return value

    @field_validator("success_word")
    @classmethod
    def _word(cls, value: str) -> str:
        if not re.fullmatch(r"[a-z]+", value) or value == "failed":
            raise ValueError(
                f"{value!r}: expected one lowercase word other than 'failed', e.g. 'done' or "
                "'passed'"
            )
        return value


class Role(BaseModel):
    """A role: its front matter and its instructions (the file's body)."""

    front_matter: RoleFrontMatter
    instructions: str
    #: The file it was read from (None: parsed from text).
    path: Path | None = None

    @property
    def name(self) -> str:
        return self.front_matter.name

    @property
    def description(self) -> str:
        return self.front_matter.description

    @property
    def tools(self) -> list[str]:
        """The tool groups the role is offered."""
        return list(self.front_matter.tools)

    @property
    def success_word(self) -> str:
        return self.front_matter.success_word

    @property
    def rules_scope(self) -> str:
        """The scope of the feedback rules this role reads."""
        return self.front_matter.rules_scope or self.name

    def has(self, group: str) -> bool:
        """Whether the role is offered the tool group ``group``."""
        return group in self.front_matter.tools

    def write_folders(self, app_folder: str) -> list[str]:
        """The folders the role may write, with ``{app}`` replaced by ``app_folder``."""
        return [f.replace(APP_FOLDER, app_folder).strip("/") for f in self.front_matter.writes]


def parse_role(text: str, where: str = "role") -> Role:
    """The role in ``text`` (a role file's content); ``where`` names it in errors."""
    m = _FRONT_MATTER.match(text)
    if m is None:
        raise RoleError(
            f"role file {where}: no front matter. A role starts with a '---' line, then YAML with "
            "name, description and tools, then a closing '---' line and the instructions."
        )
    try:
        data: Any = yaml.safe_load(m.group(1)) or {}
    except yaml.YAMLError as e:
        problem = " ".join(str(e).split())
        raise RoleError(
            f"role file {where}: the front matter is not valid YAML: {problem}"
        ) from None
    if not isinstance(data, dict):
        raise RoleError(f"role file {where}: the front matter must be a YAML mapping (key: value)")
    try:
        front = RoleFrontMatter.model_validate(data)
    except ValidationError as e:
        groups = any(err["loc"][:1] == ("tools",) for err in e.errors())
        known = f" (tool groups are: {', '.join(TOOL_GROUPS)})" if groups else ""
        raise RoleError(f"role file {where}: {describe_validation_error(e)}{known}") from None
    body = text[m.end() :].strip()
    if not body:
        raise RoleError(
            f"role file {where}: the instructions (the body after the front matter) are empty"
        )
    return Role(front_matter=front, instructions=body + "\n")


def load_role(path: str | Path) -> Role:
    """The role in the file ``path``; its name must be the file's name (``test.md``: ``test``)."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            data = f.read(MAX_ROLE_BYTES + 1)
    except FileNotFoundError:
        raise RoleError(f"role file not found: {path}") from None
    except OSError as e:
        raise RoleError(f"cannot read role file {path}: {e.strerror or e}") from None
    if len(data) > MAX_ROLE_BYTES:
        raise RoleError(f"role file {path} is larger than {MAX_ROLE_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RoleError(f"role file {path} is not UTF-8 text (byte {e.start})") from None
    role = parse_role(text, str(path))
    if role.name != path.stem:
        raise RoleError(
            f"role file {path}: name: {role.name!r} differs from the file's name {path.stem!r}; "
            "a role's file is <name>.md"
        )
    return role.model_copy(update={"path": path})


class RoleCatalog:
    """The roles found in ``folders``, the first folder that has a role winning (give the user's
    own folder before the bundled one). A folder that does not exist has no roles."""

    def __init__(self, folders: Sequence[str | Path]) -> None:
        self._files = MarkdownFolders(folders, _NAME)
        self.folders = self._files.folders

    def names(self) -> list[str]:
        """Every role's name, sorted."""
        return self._files.names()

    def path(self, name: str) -> Path:
        """The file of the role ``name``; :class:`RoleError` listing the roles if there is none."""
        found = self._files.find(name)
        if found is not None:
            return found
        available = ", ".join(self.names()) or "none"
        raise RoleError(f"unknown role {name!r}; the roles are: {available}")

    def get(self, name: str) -> Role:
        """The role ``name``, loaded and checked."""
        return load_role(self.path(name))

    def roles(self) -> list[Role]:
        """Every role, loaded (a bad file is a :class:`RoleError`)."""
        return [self.get(name) for name in self.names()]
