"""Session logs written before issue 33 (no TextDelta events, Block `steps`/`at`, ErrorEvent
without a source) resume into the conversation the model saw then.

old_logs/before-issue-33.jsonl was written by commit 842e92a (make_before_issue_33.py), with
the messages its Conversation held: a reply with text, a good and a malformed call; two calls,
the second spanning blocks, and a held-back `<`; a malformed call a server sent structured.
"""

import json
from pathlib import Path

from clover_code.agent.context import Conversation
from clover_code.agent.events import BlockCommitted, ErrorEvent, TextDelta, from_json
from clover_code.agent.old_logs import upgrade_line
from clover_code.agent.session import SessionLog

HERE = Path(__file__).parent / "old_logs"


def test_an_old_log_rebuilds_the_same_conversation():
    events = SessionLog(HERE / "before-issue-33.jsonl").events()
    conversation = Conversation("system prompt", [])
    for event in events:
        conversation.apply(event)
    expected = json.loads((HERE / "before-issue-33.messages.json").read_text(encoding="utf-8"))
    assert conversation.messages == expected


def test_an_old_log_gets_the_text_a_reader_sees_and_todays_block_fields():
    events = SessionLog(HERE / "before-issue-33.jsonl").events()
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert "<tool_call" not in shown and "Reading it first." in shown and shown.endswith("All read: alpha.")
    blocks = [e.block for e in events if isinstance(e, BlockCommitted)]
    assert all(b.forward_passes == 1 for b in blocks) and blocks[-1].seconds_since_start > 0


def test_an_old_error_event_gets_its_source_from_the_message():
    engine = upgrade_line({"type": "ErrorEvent", "message": "cannot reach http://x", "fatal": True})
    bug = upgrade_line({"type": "ErrorEvent", "message": "internal error: KeyError: 'a'", "fatal": True})
    assert (engine["source"], bug["source"]) == ("engine", "internal")
    assert from_json(engine) == ErrorEvent("cannot reach http://x", "engine", fatal=True)
