"""Score a checkpoint on held-out sessions with the real embedded engine.

Every assistant turn of every session (but slips: tools/training/demo_model/sessions.py) is decoded
from the session's true history (the conversation up to that turn) at the given threshold,
greedy. Figures: tokens per forward pass, the share of written tool calls that parse and
pass their schema, the share of expected calls written exactly (tool and arguments, in
order), and the share of turns entirely right; overall, per family, and for the turns that
follow a slip (recovery). With the engine's helpers (issue 36): the share of tokens the
scaffold committed without a pass (`forced_share`) and the share committed from copy drafts
(`drafted_share`).
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from pathlib import Path


def expected_calls(message: dict) -> list[tuple[str, dict]]:
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message.get("tool_calls") or []]


async def decode_turn(engine, messages, tools, max_tokens: int) -> tuple[str, int, int]:
    from clover_code.engine import ChatRequest

    text, tokens, passes = "", 0, 0
    async for block in engine.stream(ChatRequest(messages, tools, max_tokens=max_tokens)):
        text += block.text
        tokens += block.tokens
        passes += block.forward_passes or 0
    return text, tokens, passes


def score_turn(text: str, want: list[tuple[str, dict]], registry) -> dict:
    from clover_code.engine.markup.toolcalls import written_calls

    written = written_calls(text)
    valid = [p for p in written if p.call is not None
             and not isinstance(registry.validate(p.call.name, p.call.arguments), str)]
    got = [(p.call.name, json.loads(p.call.arguments)) for p in written if p.call is not None]
    right = [i < len(got) and got[i] == call for i, call in enumerate(want)]
    return {"written": len(written), "valid": len(valid), "expected": len(want), "exact": sum(right),
            "turn_right": got == want if want else not written, "right": right}


def helper_counts(stats) -> dict[str, int]:
    """The engine's per-request helper figures (EmbeddedEngine.last_stats) as counts."""
    scaffold, drafts = stats.scaffold, stats.drafts
    return {"forced": scaffold.forced if scaffold else 0, "withdrawn": scaffold.withdrawn if scaffold else 0,
            "repicked": scaffold.repicked if scaffold else 0, "drafted": drafts.committed if drafts else 0,
            "draft_passes": drafts.passes if drafts else 0, "draft_rejected": drafts.rejected if drafts else 0}


def evaluate(model: Path, sessions: list[dict], tools: list[dict], threshold: float = 0.95,
             max_tokens: int = 768, scaffold: bool = True, draft: bool = False,
             turns_out: list[dict] | None = None, policy: str | None = None) -> dict:
    """The figures over `sessions`, decoded with `policy` (NAME[:KNOB], engine/policies.py;
    None: the threshold rule at `threshold`); with `turns_out`, also one record per decoded turn
    appended to it (session, turn, the text written, each expected call right or not), so two
    runs can be compared call by call."""
    from clover_code.engine.embedded.engine import EmbeddedEngine
    from clover_code.tools import default_registry
    from tools.training.demo_model.chat import is_target

    registry = default_registry()
    engine = EmbeddedEngine(model, threshold=threshold, scaffold=scaffold, draft=draft, policy=policy)
    tools = offered_tools(tools, engine.info.trained_tools)
    totals: dict[str, float] = defaultdict(float)
    by_group: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    by_call: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # "family turn.call tool" -> [exact, expected]

    async def run() -> None:
        for session in sessions:
            messages = session["messages"]
            turn = 0
            for i, m in enumerate(messages):
                if not is_target(m):
                    continue
                turn += 1
                want = expected_calls(m)
                text, tokens, passes = await decode_turn(engine, messages[:i], tools, max_tokens)
                result = score_turn(text, want, registry)
                if turns_out is not None:
                    turns_out.append({"session": session.get("seed"), "family": session["family"], "turn": turn,
                                      "text": text, "right": result["right"], "tokens": tokens, "passes": passes,
                                      "want": [json.dumps({"name": n, "arguments": a}) for n, a in want]})
                for k, ((name, _), right) in enumerate(zip(want, result.pop("right"), strict=False)):
                    tally = by_call[f"{session['family']} {turn}.{k + 1} {name}"]
                    tally[0] += right
                    tally[1] += 1
                result.update(tokens=tokens, passes=passes, turns=1, **helper_counts(engine.last_stats))
                groups = [session["family"]] + (["after a slip"] if after_slip(messages, i) else [])
                for key, value in result.items():
                    totals[key] += value
                    for group in groups:
                        by_group[group][key] += value
        await engine.aclose()  # the decode thread is done before the interpreter exits

    asyncio.run(run())
    recovery = by_group.pop("after a slip", None)
    return {**figures(totals), "families": {f: figures(v) for f, v in sorted(by_group.items())},
            **({"after_slip": figures(recovery)} if recovery else {}),
            "exact_by_call": {k: f"{right}/{n}" for k, (right, n) in sorted(by_call.items())},
            "sessions": len(sessions), "threshold": threshold, "policy": engine.info.policy, "scaffold": scaffold,
            "draft": draft}


def offered_tools(tools: list[dict], trained: tuple[str, ...] | None) -> list[dict]:
    """The tools the agent offers this checkpoint (wiring's `trained_only`): those it was trained
    to call when it names them. A tool it never saw in its prompt's tool line (the todo list,
    added after the demo model was trained) costs it calls it otherwise writes right."""
    return tools if trained is None else [t for t in tools if t["function"]["name"] in trained]


def after_slip(messages: list[dict], i: int) -> bool:
    """Whether the assistant turn at i answers a slip's error (the recovery the model must make)."""
    before = [m for m in messages[:i] if m["role"] == "assistant"]
    return bool(before) and bool(before[-1].get("slip"))


def figures(t: dict[str, float]) -> dict:
    return {"tpf": round(t["tokens"] / max(1, t["passes"]), 2),
            "valid_call_rate": round(t["valid"] / max(1, t["written"]), 4),
            "exact_call_rate": round(t["exact"] / max(1, t["expected"]), 4),
            "turn_accuracy": round(t["turn_right"] / max(1, t["turns"]), 4),
            "calls_expected": int(t["expected"]), "calls_written": int(t["written"]), "turns": int(t["turns"]),
            "tokens": int(t["tokens"]), "forward_passes": int(t["passes"]),
            "forced_share": round(t["forced"] / max(1, t["tokens"]), 4),
            "drafted_share": round(t["drafted"] / max(1, t["tokens"]), 4),
            **{k: int(t[k]) for k in ("withdrawn", "repicked", "draft_passes", "draft_rejected")}}
