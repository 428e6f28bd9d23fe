"""The router and topic files: read back as written, junk lines skipped, counts and links kept."""

from __future__ import annotations

from loopkit_tools.memory import Note, Router, RouterLine, TopicEntry, TopicFile


def test_router_reads_back_as_written_and_stays_sorted() -> None:
    router = Router()
    router.upsert(RouterLine(topic="saving", description="saving invoices", count=1))
    router.upsert(RouterLine(topic="editing", description="editing — fields (v2)", count=3))
    router.upsert(RouterLine(topic="saving", description="saving invoices", count=2))
    text = router.render()
    assert "- [saving](saving.md) — saving invoices (2 notes)" in text
    again = Router.parse(text)
    assert again == router
    assert [line.topic for line in again.lines] == ["editing", "saving"]
    assert again.render() == text


def test_topic_file_reads_back_as_written() -> None:
    topic = TopicFile(topic="editing", description="editing fields")
    first = Note(kind="verdict", topic="editing", title="Amount field", verdict="Works (mostly).")
    topic.upsert(TopicEntry.of(first))
    topic.upsert(
        TopicEntry.of(Note(kind="workflow", topic="editing", title="Edit", steps=["a", "b"]))
    )
    topic.upsert(TopicEntry.of(first.model_copy(update={"verdict": "Works."})))
    topic.link(["saving", "editing", "dialogs", "saving"])
    text = topic.render()
    assert TopicFile.parse("editing", text) == topic
    assert [e.summary for e in topic.entries] == ["Works.", "a → b"]
    assert topic.related == ["saving", "dialogs"]
    assert TopicFile.parse("editing", text).render() == text


def test_hand_edited_files_are_read_leniently() -> None:
    router = Router.parse(
        "# Notes\n\nsome prose\n- [ok](ok.md) — fine (1 note)\n- [bad](other.md) — x (1 note)\n"
        "- [Bad Name](Bad Name.md) — x (2 notes)\n"
    )
    assert [(line.topic, line.count) for line in router.lines] == [("ok", 1)]
    topic = TopicFile.parse(
        "t",
        "# Topic: t\n\nWhat t is.\n\nSee also: [u](u.md), [not a link]\n\n## Notes\n"
        "- failure: [A](t/a.md) — it fails\n- opinion: [B](t/b.md)\n* random text\n",
    )
    assert topic.description == "What t is."
    assert topic.related == ["u"]
    assert [(e.kind, e.path) for e in topic.entries] == [("failure", "t/a.md")]
    assert TopicFile.parse("new-topic", "").description == "notes about new topic"
