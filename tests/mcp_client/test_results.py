"""MCP results as the plain text a model reads (built from the SDK's own result types)."""

from __future__ import annotations

import subprocess
import sys

from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from loopkit.mcp import result_to_text


def test_text_blocks_are_joined_by_newlines_without_json_escaping() -> None:
    result = CallToolResult(content=[TextContent(text='say "hi"'), TextContent(text="c:\\dir")])
    assert result_to_text(result) == 'say "hi"\nc:\\dir'


def test_text_wins_over_structured_content() -> None:
    result = CallToolResult(content=[TextContent(text="5")], structured_content={"result": 5})
    assert result_to_text(result) == "5"


def test_structured_content_alone_becomes_compact_json() -> None:
    result = CallToolResult(content=[], structured_content={"a": [1, 2], "b": "ü"})
    assert result_to_text(result) == '{"a":[1,2],"b":"ü"}'


def test_binary_blocks_become_short_notes() -> None:
    result = CallToolResult(
        content=[
            ImageContent(data="AAAA", mime_type="image/png"),
            AudioContent(data="AAAAAA==", mime_type="audio/wav"),
            EmbeddedResource(
                resource=BlobResourceContents(uri="file:///x.bin", blob="AAAA", mime_type=None)
            ),
        ]
    )
    assert result_to_text(result) == (
        "[image: image/png, 3 bytes, not shown]\n"
        "[audio: audio/wav, 4 bytes, not shown]\n"
        "[resource file:///x.bin: application/octet-stream, 3 bytes, not shown]"
    )


def test_resources_text_and_links() -> None:
    result = CallToolResult(
        content=[
            EmbeddedResource(resource=TextResourceContents(uri="file:///a.txt", text="hello")),
            ResourceLink(name="report", uri="file:///r.html"),
        ]
    )
    assert result_to_text(result) == "hello\n[resource link: report <file:///r.html>]"


def test_empty_result_is_empty_text() -> None:
    assert result_to_text(CallToolResult(content=[])) == ""


def test_importing_loopkit_mcp_does_not_import_the_sdk_or_litellm() -> None:
    code = (
        "import sys, loopkit.mcp; "
        "bad = [m for m in ('mcp', 'mcp_types', 'litellm', 'httpx2') if m in sys.modules]; "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
