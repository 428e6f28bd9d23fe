"""Secrets of every shape loopkit redacts, to plant in an output and look for afterwards.

``SHAPES``: (what, text to plant, the secret part that must not survive). ``ENVIRONMENT``:
secret-looking variables with awkward values (a quote, a backslash, non-ASCII), set with
``monkeypatch`` before the writer is made; ``LATE`` is set after it. :func:`leaks` looks for each
secret in its raw, JSON-escaped and HTML-escaped forms.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable

import pytest

_B62 = "aB3dE5fG7hJ9kL2mN4pQ6rS8tU1vW3xY5zA7bC9"

SHAPES: list[tuple[str, str, str]] = [
    ("anthropic key", "key sk-ant-api03-" + _B62 * 2, "sk-ant-api03-" + _B62),
    ("openai key", "OPENAI=sk-" + _B62[:32] + "T3BlbkFJ" + _B62[:12], _B62[:32] + "T3BlbkFJ"),
    ("openai project key", "sk-proj-" + _B62 + "_" + _B62[::-1], "sk-proj-" + _B62),
    ("bearer, one space", "Authorization: Bearer tok3n-ABCDEFGH12345", "tok3n-ABCDEFGH12345"),
    ("bearer, tabs", "authorization:\tBearer\t\ttok3n-TABBED98765", "tok3n-TABBED98765"),
    ("bearer, spaces", "bearer      spacedTOKEN4242xyz", "spacedTOKEN4242xyz"),
    ("bearer, newline", "BEARER\n  newlineTOKEN777abc", "newlineTOKEN777abc"),
    (
        "basic, spaces",
        "Authorization: Basic   dXNlcjpwYXNzd29yZDEyMw==",
        "dXNlcjpwYXNzd29yZDEyMw==",
    ),
    (
        "basic, newline and tab",
        "basic\n\tQWxhZGRpbjpvcGVuIHNlc2FtZQ==",
        "QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
    ),
    ("aws access key id", "id AKIAIOSFODNN7EXAMPLE in use", "AKIAIOSFODNN7EXAMPLE"),
    ("aws temporary key id", "ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A"),
    (
        "aws secret key, environment style",
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "aws secret key, config file",
        'aws_secret_access_key = "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"',
        "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
    ),
    (
        "aws secret key, JSON",
        '{"SecretAccessKey": "Q2hhbmdlTWVOb3cvK3BsZWFzZS9zZWNyZXRrZXkx"}',
        "Q2hhbmdlTWVOb3cvK3BsZWFzZS9zZWNyZXRrZXkx",
    ),
    ("github classic token", "ghp_" + _B62[:36], "ghp_" + _B62[:36]),
    ("github oauth token", "gho_" + _B62[1:37], "gho_" + _B62[1:37]),
    ("github app token", "token=ghs_" + _B62[2:38], "ghs_" + _B62[2:38]),
    (
        "github fine-grained token",
        "github_pat_11ABCDEFG0" + _B62[:12] + "_" + _B62 + _B62[:19],
        "github_pat_11ABCDEFG0" + _B62[:12],
    ),
    ("gitlab token", "glpat-" + _B62[:20], "glpat-" + _B62[:20]),
    ("slack bot token", "xoxb-123456789012-1234567890123-" + _B62[:24], _B62[:24]),
    ("slack user token", "xoxp-1234-5678-9012-" + _B62[5:37], _B62[5:37]),
    (
        "slack webhook",
        "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/" + _B62[:24],
        "T0AAAAAAA/B0BBBBBBB/" + _B62[:24],
    ),
    ("google api key", "AIzaSyD" + _B62[:32], "AIzaSyD" + _B62[:32]),
    ("stripe key", "sk_live_" + _B62[:30], "sk_live_" + _B62[:30]),
    ("npm token", "npm_" + _B62[:36], "npm_" + _B62[:36]),
    ("hugging face token", "hf_" + _B62[:34], "hf_" + _B62[:34]),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ),
    ("url password", "postgres://admin:Pa55-w0rd!x@db.internal:5432/app", "Pa55-w0rd!x"),
    ("url password holding @", "https://deploy:h@rd-t0-gue55@git.example.com/r", "h@rd-t0-gue55"),
    (
        "pem private key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAxK9s7PEMBODYLINE0123456789abcdef\n"
        "-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEAxK9s7PEMBODYLINE0123456789abcdef",
    ),
    (
        "openssh private key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUSSHBODY42\n"
        "-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUSSHBODY42",
    ),
    ("api_key assignment", "litellm call failed: api_key='zz9988776655aa'", "zz9988776655aa"),
]

ENVIRONMENT: list[tuple[str, str]] = [
    ("ANTHROPIC_API_KEY", "sk-ant-api03-ENVKEY" + _B62[::-1]),
    ("OPENAI_API_KEY", "plain-openai-env-value-0042"),
    ("MY_SERVICE_TOKEN", "svc-token-value-31337"),
    ("GITHUB_PAT", "pat-shaped-nothing-known-9q8w"),
    ("DB_PASSWORD", 'pa"ss\\wörd-with-quote-9'),
    ("SOME_CREDENTIAL", "créd€ntial-value-77"),
    ("APP_SECRET", "tab\tand\nnewline-secret-5"),
]

LATE = ("LATE_EXPORTED_TOKEN", "exported-after-start-8080")
"""Set only after the writer was created: it must be redacted all the same."""


def plant_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Set the secret-looking variables of ENVIRONMENT."""
    for name, value in ENVIRONMENT:
        monkeypatch.setenv(name, value)


def all_secrets() -> list[str]:
    """Every secret to look for: the shapes', the environment's and the late one."""
    return [s for _, _, s in SHAPES] + [v for _, v in ENVIRONMENT] + [LATE[1]]


def planted_text() -> str:
    """One text holding every shape and every environment value (each on its own line)."""
    parts = [text for _, text, _ in SHAPES] + [f"env {v} end" for _, v in ENVIRONMENT]
    return "\n".join([*parts, f"late {LATE[1]} end"])


def _forms(secret: str) -> set[str]:
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    forms |= {html.escape(f) for f in list(forms)}
    return forms


def leaks(output: str, secrets: Iterable[str] | None = None) -> list[str]:
    """The secrets that appear in ``output`` in any raw, JSON- or HTML-escaped form."""
    candidates = all_secrets() if secrets is None else list(secrets)
    return [s for s in candidates if any(form in output for form in _forms(s))]
