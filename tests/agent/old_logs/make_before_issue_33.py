"""Wrote before-issue-33.jsonl and its .messages.json with the code of commit 842e92a (old
Block field names, no TextDelta events), kept to say how they were made:

    git archive 842e92a | tar -x -C OLD && ln -s ../prompts OLD/clover_code/prompts
    PYTHONPATH=OLD python make_before_issue_33.py OUTDIR
"""
import asyncio
import json
import sys
from pathlib import Path

from clover_code.agent.context import Conversation
from clover_code.agent.loop import Agent, AgentSettings
from clover_code.agent.permissions import ModeApprover
from clover_code.agent.session import SessionLog
from clover_code.engine.scripted import ScriptedEngine
from clover_code.tools import ToolContext, default_registry
from clover_code.tools.workspace import Workspace

out = Path(sys.argv[1])
root = out / "repo"
root.mkdir(parents=True, exist_ok=True)
(root / "a.txt").write_text("alpha\n")
def call(name, **a):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": a}) + "\n</tool_call>"
replies = [
    # text, a good call, a malformed one, text after; a tag cut by the block boundary
    "Reading it first. " + call("read_file", path="a.txt") + " then " +
    '<tool_call>{"name": "read_file", "arguments": {"path": </tool_call> and more text.',
    # two calls, the second spanning blocks; then a trailing partial tag
    "Two more. " + call("read_file", path="a.txt") + " and " + call("glob", pattern="*.txt") + " done <",
    {"content": "Structured.", "tool_calls": [{"name": "read_file", "arguments": "[1]"}]},
    "All read: alpha.",
]
engine = ScriptedEngine(replies, block_size=5)
registry = default_registry()
log = SessionLog(out / "old-session.jsonl")
conv = Conversation("system prompt", [])
agent = Agent(engine, registry, ToolContext(Workspace(root), sandbox=False), ModeApprover("yes"),
              AgentSettings(approval="full-auto"), log, "system prompt", conversation=conv)
async def main():
    return [e async for e in agent.run("read a.txt")]
events = asyncio.run(main())
log.close()
(out / "old-session.messages.json").write_text(json.dumps(conv.messages, indent=1, ensure_ascii=False))
print([type(e).__name__ for e in events])
print(json.dumps(conv.messages, indent=1)[:3000])
