"""Glossary: allowed terms with definitions, wrong terms named with their replacement."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopkit_tools.memory import Glossary, MemoryTools, NotesError

GLOSSARY = """# Glossary (en)

## Terms
- **invoice**: a bill sent to a customer, with its lines and total.
- **dialog**: a window that asks for input before the work goes on.

## Wrong terms
- bill → invoice
- pop-up → dialog
- pop up window → dialog
- e-mail → email
"""


def _hits(text: str) -> list[tuple[str, str, int, int]]:
    glossary = Glossary.parse("en", GLOSSARY)
    return [(w.found, w.replacement, w.line, w.column) for w in glossary.check(text)]


def test_parse_reads_terms_and_wrong_terms() -> None:
    glossary = Glossary.parse("en", GLOSSARY)
    assert glossary.terms["dialog"].startswith("a window")
    assert glossary.wrong == {
        "bill": "invoice",
        "pop-up": "dialog",
        "pop up window": "dialog",
        "e-mail": "email",
    }
    assert Glossary.parse("en", glossary.render()).wrong == glossary.wrong


@pytest.mark.parametrize(
    ("text", "hits"),
    [
        ("The Bill was saved.", [("Bill", "invoice", 1, 5)]),
        ("Billing and billed bills are fine.", []),
        (
            "A POP-UP opened.\nThen a pop up\nwindow.",
            [
                ("POP-UP", "dialog", 1, 3),
                ("pop up\nwindow", "dialog", 2, 8),
            ],
        ),
        ("Send it by e-mail, then bill.", [("e-mail", "email", 1, 12), ("bill", "invoice", 1, 25)]),
        ("e-mails and pop-ups", []),
        ("", []),
    ],
)
def test_check_names_wrong_terms_at_word_boundaries(
    text: str, hits: list[tuple[str, str, int, int]]
) -> None:
    assert _hits(text) == hits


def test_check_terms_tool_and_the_note_check(memory: MemoryTools, repo: Path) -> None:
    with pytest.raises(NotesError, match=r"no glossary for language 'en'.*glossaries: none yet"):
        memory.check_terms("a bill")
    (repo / "notes" / "glossary").mkdir(parents=True)
    (repo / "notes" / "glossary" / "en.md").write_text(GLOSSARY)
    assert memory.check_terms("The invoice dialog opens.") == "No wrong terms (glossary 'en')."
    assert memory.check_terms("The bill\nopens a pop-up.").splitlines() == [
        "2 wrong terms (glossary 'en'); replace them:",
        "- line 1, column 5: 'bill' is a wrong term; write 'invoice'",
        "- line 2, column 9: 'pop-up' is a wrong term; write 'dialog'",
    ]
    with pytest.raises(NotesError, match="glossaries: en"):
        memory.check_terms("x", language="de")
    with pytest.raises(NotesError, match=r"uses wrong terms: 'pop-up' → 'dialog'"):
        memory.write_note("verdict", "dialogs", "Delete", verdict="The pop-up asks first.")
    assert not (repo / "notes" / "dialogs.md").exists()
    memory.write_note("verdict", "dialogs", "Delete", verdict="The dialog asks first.")
    assert "glossary" not in memory.read_router()  # the glossary folder is not a topic
    assert memory.search_notes("bill invoice").startswith("No note matches")  # nor a note


def test_a_saved_glossary_loads_back(memory: MemoryTools, repo: Path) -> None:
    glossary = Glossary.parse("de", GLOSSARY.replace("(en)", "(de)"))
    memory.glossaries.save(glossary)
    assert (repo / "notes" / "glossary" / "de.md").exists()
    loaded = memory.glossaries.load("de")
    assert (loaded.terms, loaded.wrong) == (glossary.terms, glossary.wrong)
    assert memory.glossaries.languages() == ["de"]
    assert "'Bill' is a wrong term" in memory.check_terms("Bill", language="de")
