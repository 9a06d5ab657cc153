"""report.md: the engines side by side, TPF per task family, every task, what did not run."""

from __future__ import annotations

from clover_code.eval.machine import describe
from clover_code.eval.stats import EngineStats, Outcome, Summary
from clover_code.eval.tasks import Problem
from clover_code.jsonsafe import JSONObject

PLOT_NAME = "pass_rate_vs_wall.png"


def render(summary: Summary, run: JSONObject, problems: list[Problem], plot: str | None,
           plot_note: str | None = None) -> str:
    machine = run.get("machine") or {}
    out = ["# clover-code eval", ""]
    if run.get("command"):
        out += ["```", run["command"], "```", ""]
    ran = len(summary.outcomes)
    out += [f"- When: {run.get('updated') or run.get('created') or '?'}",
            f"- Machine: {describe(machine)} (Python {machine.get('python', '?')}, "
            f"clover-code {machine.get('clover_code', '?')})",
            f"- Tasks: {ran} run" + (f", {len(problems)} not run (below)" if problems else "")
            + f"; up to {summary.tries} {'try' if summary.tries == 1 else 'tries'} each", ""]
    out += _engines(summary) + [""]
    out += _families(summary) + [""]
    out += _tasks(summary) + [""]
    if plot:
        out += [f"![pass rate against wall time per task, per engine]({plot})", ""]
    elif plot_note:
        out += [f"(No plot: {plot_note})", ""]
    out += _problems(summary, problems)
    out += ["Per try: `results.jsonl`; the agent's events, progress and check output: `logs/ENGINE/TASK/`.", ""]
    return "\n".join(out)


def _engines(summary: Summary) -> list[str]:
    tries = range(1, summary.tries + 1)
    head = ["engine", "model", *(f"pass@{k}" for k in tries), "tool calls (valid)", "tool errors", "tokens in",
            "tokens out", "forward passes", "TPF", "first block", "tokens/s", "wall/task", "est. cost/task"]
    rows = [head, ["---"] * len(head)]
    for s in summary.engines:
        passes = f"{s.forward_passes:,}" if s.forward_passes else "—"
        rows.append([f"**{s.name}**", ", ".join(sorted(_short(m) for m in s.models)) or s.spec,
                     *(_pct(s.pass_rate(k)) + f" ({s.passed_by.get(k, 0)}/{s.tasks})" for k in tries),
                     f"{s.tool_calls} ({_pct(s.valid_rate)})", str(s.tool_errors), _tokens_in(s),
                     f"{s.tokens_out:,}", passes, _num(s.tpf, 2), _secs(s.first_block_s, 3),
                     _num(s.tokens_per_s, 1), _secs(s.wall_per_task, 1),
                     ("≥ " if s.tokens_in_unknown and s.cost is not None else "") + _cost(s.cost_per_task)])
    notes = [f"{s.name}: {_notes(s)}" for s in summary.engines if _notes(s)]
    text = ["## Engines", "", *_table(rows)]
    text += ["", "TPF: tokens per forward pass (the engine's own count; none for a server that does not report "
             "passes). First block: seconds from a request to its first committed block, mean over requests. "
             "tokens/s: tokens out over decoding time. Wall/task: the agent's time over its tries, model "
             "loading and checks excluded. Cost: from --price (USD per million tokens in and out). Tokens in "
             "shown as — or ≥: the server did not report prompt tokens (no `usage`) for some tries, so the cost "
             "is a floor (≥)."]
    if notes:
        text += ["", *(f"- {n}" for n in notes)]
    return text


def _tokens_in(s: EngineStats) -> str:
    """Prompt tokens; "—" when the engine never counted them, "≥ N" when only some tries did."""
    if s.tokens_in_unknown and not s.tokens_in:
        return "—"
    return ("≥ " if s.tokens_in_unknown else "") + f"{s.tokens_in:,}"


def _short(model: str) -> str:
    """A checkpoint folder by its name (`clover-demo`), a server's model name as it is."""
    return model.rstrip("/").rsplit("/", 1)[-1] if model.startswith(("/", "~", ".")) else model


def _notes(s: EngineStats) -> str:
    parts = []
    if s.timeouts:
        parts.append(f"{s.timeouts} past the time limit")
    if s.errors:
        parts.append(f"{s.errors} ended by an error (below)")
    if s.incomplete:
        parts.append(f"{s.incomplete} with tries still to run (interrupted; --resume runs them)")
    return ", ".join(parts)


def _families(summary: Summary) -> list[str]:
    names = [s.name for s in summary.engines]
    head = ["family", *(f"{n} TPF" for n in names), *(f"{n} passed" for n in names)]
    rows = [head, ["---"] * len(head)]
    for family, per in sorted(summary.families.items()):
        rows.append([family, *(_num(per[n].tpf, 2) if n in per else "—" for n in names),
                     *(f"{per[n].passed}/{per[n].tasks}" if n in per else "—" for n in names)])
    return ["## Per task family", "", *_table(rows)]


def _tasks(summary: Summary) -> list[str]:
    names = [s.name for s in summary.engines]
    base = names[0] if names else ""  # no engines: no columns that use it
    others = names[1:]
    head = ["task", "family", *names, *(f"Δ wall {n} − {base}" for n in others),
            *(f"Δ tokens {n} − {base}" for n in others)]
    rows = [head, ["---"] * len(head)]
    for task, per in summary.outcomes.items():
        row = [task, summary.task_family.get(task, ""), *(_cell(per.get(n)) for n in names)]
        for n in others:
            row.append(_delta(per.get(base), per.get(n), "seconds", " s"))
        for n in others:
            row.append(_delta(per.get(base), per.get(n), "tokens_out", ""))
        rows.append(row)
    return ["## Per task", "", *_table(rows)]


def _cell(o: Outcome | None) -> str:
    if o is None:
        return "—"
    if o.passed_at is not None:
        mark = f"✓ try {o.passed_at}"
    elif o.status == "timeout":
        mark = "✗ time limit"
    elif o.status == "error":
        mark = "✗ error"
    else:
        mark = f"✗ {o.tries} {'try' if o.tries == 1 else 'tries'}"
    return f"{mark}, {o.seconds:.1f} s, {o.tokens_out:,} tok"


def _delta(a: Outcome | None, b: Outcome | None, key: str, unit: str) -> str:
    if a is None or b is None:
        return "—"
    d = getattr(b, key) - getattr(a, key)
    return f"{d:+.1f}{unit}" if isinstance(d, float) else f"{d:+,}{unit}"


def _problems(summary: Summary, problems: list[Problem]) -> list[str]:
    out = []
    if problems:
        out += ["## Not run", ""]
        out += [f"- `{p.path}`: {p.reason}" for p in problems] + [""]
    errors = [(t, e, o.error) for t, per in summary.outcomes.items() for e, o in per.items()
              if o.status in ("error", "timeout") and o.error]
    if errors:
        out += ["## Errors", ""]
        out += [f"- {t} on {e}: {msg}" for t, e, msg in errors] + [""]
    return out


def _table(rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def _num(x: float | None, digits: int) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _secs(x: float | None, digits: int) -> str:
    return "—" if x is None else f"{x:.{digits}f} s"


def _cost(x: float | None) -> str:
    return "—" if x is None else f"${x:.4f}"
