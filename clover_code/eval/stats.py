"""Figures from result lines: per engine, per task family and engine, per task.

A task's outcome on an engine is the try that passed (1, 2, ...) or none. Pass rate at try k:
tasks passed by try k over tasks that ran (a task not run, malformed or needing Docker, is in
no denominator; one the engine failed on, by error or time limit, is a failure). Wall time
per task: the agent's own time over its tries (model loading and checks excluded; both are
in results.jsonl). TPF: tokens over forward passes, summed per family: a family where the
engine reports no passes (a server that does not say) has none.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clover_code.eval.engines import EngineSpec
from clover_code.jsonsafe import JSONObject

Lines = list[JSONObject]


@dataclass
class Outcome:
    """One task on one engine."""

    passed_at: int | None  # the try that passed
    status: str  # of the last try: passed | failed | timeout | error
    tries: int
    seconds: float  # agent time, all tries
    tokens_in: int
    tokens_in_unknown: int  # tries whose engine reported no prompt tokens
    tokens_out: int
    forward_passes: int | None
    tool_calls: int
    invalid_calls: int
    tool_errors: int
    first_block_s: list[float]
    decode_s: float
    complete: bool  # its last try is final
    error: str | None
    model: str | None


@dataclass
class EngineStats:
    name: str
    spec: str
    tasks: int = 0
    passed_by: dict[int, int] = field(default_factory=dict)  # try -> tasks passed by then
    seconds: float = 0.0
    tokens_in: int = 0
    tokens_in_unknown: int = 0  # tries without a prompt count: tokens in (and cost) are a floor
    tokens_out: int = 0
    passes_tokens: int = 0  # tokens out where passes are known
    forward_passes: int = 0
    tool_calls: int = 0
    invalid_calls: int = 0
    tool_errors: int = 0
    first_blocks: list[float] = field(default_factory=list)
    decode_s: float = 0.0
    timeouts: int = 0
    errors: int = 0
    incomplete: int = 0
    cost: float | None = None
    models: set[str] = field(default_factory=set)

    def pass_rate(self, attempt: int) -> float | None:
        return self.passed_by.get(attempt, 0) / self.tasks if self.tasks else None

    @property
    def wall_per_task(self) -> float | None:
        return self.seconds / self.tasks if self.tasks else None

    @property
    def tpf(self) -> float | None:
        return self.passes_tokens / self.forward_passes if self.forward_passes else None

    @property
    def valid_rate(self) -> float | None:
        return 1 - self.invalid_calls / self.tool_calls if self.tool_calls else None

    @property
    def first_block_s(self) -> float | None:
        return sum(self.first_blocks) / len(self.first_blocks) if self.first_blocks else None

    @property
    def tokens_per_s(self) -> float | None:
        return self.tokens_out / self.decode_s if self.decode_s > 0 else None

    @property
    def cost_per_task(self) -> float | None:
        return self.cost / self.tasks if self.cost is not None and self.tasks else None


@dataclass
class FamilyStats:
    tasks: int = 0
    passed: int = 0
    tokens: int = 0
    forward_passes: int = 0

    @property
    def tpf(self) -> float | None:
        return self.tokens / self.forward_passes if self.forward_passes else None


@dataclass
class Summary:
    engines: list[EngineStats]
    families: dict[str, dict[str, FamilyStats]]  # family -> engine -> stats
    outcomes: dict[str, dict[str, Outcome]]  # task -> engine -> outcome
    task_family: dict[str, str]
    tries: int


def outcome(lines: Lines) -> Outcome:
    passed = next((line["try"] for line in lines if line.get("passed")), None)
    last = lines[-1]
    known = [line["forward_passes"] for line in lines if line.get("forward_passes") is not None]
    return Outcome(
        passed_at=passed, status=last.get("status", "failed"), tries=len(lines),
        seconds=sum(float(line.get("seconds") or 0) for line in lines),
        tokens_in=sum(int(line.get("tokens_in") or 0) for line in lines),
        tokens_in_unknown=sum(line.get("tokens_in") is None for line in lines),
        tokens_out=sum(int(line.get("tokens_out") or 0) for line in lines),
        forward_passes=sum(known) if known else None,
        tool_calls=sum(int(line.get("tool_calls") or 0) for line in lines),
        invalid_calls=sum(int(line.get("invalid_calls") or 0) for line in lines),
        tool_errors=sum(int(line.get("tool_errors") or 0) for line in lines),
        first_block_s=[float(line["first_block_s"]) for line in lines if line.get("first_block_s") is not None],
        decode_s=sum(float(line.get("decode_s") or 0) for line in lines),
        complete=bool(last.get("final")),
        error=next((line.get("error") for line in reversed(lines) if line.get("error")), None),
        model=next((line.get("model") for line in reversed(lines) if line.get("model")), None),
    )


def summarize(latest: dict[tuple[str, str], Lines], engines: list[EngineSpec], tries: int,
              task_order: list[str] | None = None) -> Summary:
    """Figures for `engines` (in their order) over every task in `latest`."""
    order = task_order or []
    tasks = [t for t in order if any((t, e.name) in latest for e in engines)]
    tasks += sorted({t for t, _ in latest} - set(tasks))
    stats = {e.name: EngineStats(e.name, e.spec) for e in engines}
    outcomes: dict[str, dict[str, Outcome]] = {}
    families: dict[str, dict[str, FamilyStats]] = {}
    task_family: dict[str, str] = {}
    for task in tasks:
        for engine in engines:
            lines = latest.get((task, engine.name))
            if not lines:
                continue
            o = outcomes.setdefault(task, {})[engine.name] = outcome(lines)
            family = task_family.setdefault(task, str(lines[0].get("family") or "other"))
            _add(stats[engine.name], o, lines, tries)
            fam = families.setdefault(family, {}).setdefault(engine.name, FamilyStats())
            fam.tasks += 1
            fam.passed += o.passed_at is not None
            if o.forward_passes:
                fam.tokens += _tokens_with_passes(lines)
                fam.forward_passes += o.forward_passes
    for engine in engines:
        s = stats[engine.name]
        s.cost = engine.price.cost(s.tokens_in, s.tokens_out) if engine.price else None
    return Summary([stats[e.name] for e in engines], families, outcomes, task_family, tries)


def _tokens_with_passes(lines: Lines) -> int:
    """Tokens out of the tries whose forward passes are known (what TPF divides)."""
    return sum(int(line.get("tokens_out") or 0) for line in lines if line.get("forward_passes") is not None)


def _add(s: EngineStats, o: Outcome, lines: Lines, tries: int) -> None:
    s.tasks += 1
    for k in range(1, tries + 1):
        s.passed_by[k] = s.passed_by.get(k, 0) + (o.passed_at is not None and o.passed_at <= k)
    s.seconds += o.seconds
    s.tokens_in += o.tokens_in
    s.tokens_in_unknown += o.tokens_in_unknown
    s.tokens_out += o.tokens_out
    if o.forward_passes:
        s.forward_passes += o.forward_passes
        s.passes_tokens += _tokens_with_passes(lines)
    s.tool_calls += o.tool_calls
    s.invalid_calls += o.invalid_calls
    s.tool_errors += o.tool_errors
    s.first_blocks += o.first_block_s
    s.decode_s += o.decode_s
    s.timeouts += o.status == "timeout"
    s.errors += o.status == "error"
    s.incomplete += not o.complete
    if o.model:
        s.models.add(o.model)
