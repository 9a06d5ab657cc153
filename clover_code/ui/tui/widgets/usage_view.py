"""UsageView: `/cost` in the transcript: tokens per turn, the context by part, the cost.

Drawn once from figures it is given (the session ledger's turns, agent/context_count.py's
count of the context); a later `/cost` adds a new one rather than changing this. An estimate
is marked `~` and says so: only the model's tokenizer counts what the model sees.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from clover_code.agent.context_count import ContextCount
from clover_code.ui.terminal_text import visible
from clover_code.ui.tui.ledger import TurnUsage
from clover_code.ui.tui.prices import Prices

MESSAGE_CHARS = 36
LAST_TURNS = 20  # rows; earlier turns are summed into one
BAR = 20


class UsageView(Static):
    DEFAULT_CSS = """
    UsageView { height: auto; margin: 1 0 0 2; padding: 0 1; border-left: wide $accent; }
    """

    def __init__(self, turns: list[TurnUsage], total: TurnUsage, context: ContextCount, window: int,
                 prices: Prices | None) -> None:
        super().__init__(Group(_turns_table(turns, total, prices), Text(""), _context_table(context, window),
                               Text(""), _price_line(total, prices)), classes="usage")


def _k(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 10_000 else f"{n:,}"


def _turns_table(turns: list[TurnUsage], total: TurnUsage, prices: Prices | None) -> Table:
    table = Table(title="Tokens per turn", title_justify="left", box=None, pad_edge=False, show_edge=False)
    table.add_column("#", justify="right", style="dim")
    table.add_column("message", no_wrap=True, max_width=MESSAGE_CHARS, overflow="ellipsis")
    for name in ("requests", "in", "cached", "out"):
        table.add_column(name, justify="right")
    if prices is not None:
        table.add_column("cost", justify="right")
    shown = turns[-LAST_TURNS:]
    if len(turns) > len(shown):
        earlier = _sum(turns[: len(turns) - len(shown)], f"({len(turns) - len(shown)} earlier turns)")
        table.add_row("", *_cells(earlier, prices), style="dim")
    first = len(turns) - len(shown)
    for number, turn in enumerate(shown, first + 1):
        table.add_row(str(number), *_cells(turn, prices))
    table.add_row("", *_cells(total, prices), style="bold")
    return table


def _cells(turn: TurnUsage, prices: Prices | None) -> list[str]:
    message = visible(" ".join(turn.text.split()))
    cells = [message, str(turn.requests), _k(turn.tokens_in), _k(turn.cached_in) if turn.cached_in else "-",
             _k(turn.tokens_out)]
    if prices is not None:
        cells.append(_money(prices.cost(turn.tokens_in, turn.tokens_out)))
    return cells


def _sum(turns: list[TurnUsage], label: str) -> TurnUsage:
    out = TurnUsage(label)
    for turn in turns:
        out.add(turn)
    return out


def _context_table(context: ContextCount, window: int) -> Table:
    used = context.tokens
    total = f"{'' if context.exact else '~'}{_k(used)}"
    title = f"Context: {total} of {_k(window)} tokens ({used / window:.0%})" if window else f"Context: {total} tokens"
    how = ("counted with the model's tokenizer" if context.parts_exact
           else "counted with the model's tokenizer, the parts estimated" if context.exact
           else "estimated: no tokenizer of the model at hand")
    table = Table(title=f"{title} · {how}", title_justify="left", box=None, pad_edge=False, show_edge=False)
    table.add_column("part")
    table.add_column("tokens", justify="right")
    table.add_column("of the window", justify="right")
    table.add_column("share of what is used")
    about = "" if context.parts_exact else "~"
    for part in context.parts:
        filled = min(BAR, round(BAR * part.tokens / used)) if used else 0
        table.add_row(part.name, f"{about}{_k(part.tokens)}", f"{part.tokens / window:.1%}" if window else "",
                      Text("█" * filled + "░" * (BAR - filled), style="cyan"))
    if window:
        free = max(0, window - used)
        table.add_row("free", f"{'' if context.exact else '~'}{_k(free)}", f"{free / window:.1%}", "")
    return table


def _price_line(total: TurnUsage, prices: Prices | None) -> Text:
    if prices is None:
        return Text("No cost estimate: set price_input_per_mtok and price_output_per_mtok "
                    "(per million tokens) in ~/.config/clover-code/config.toml.", style="dim")
    return Text(f"Estimated cost {_money(prices.cost(total.tokens_in, total.tokens_out))} at "
                f"{prices.input:g} per million tokens in and {prices.output:g} out "
                "(cached tokens counted at the input price).", style="dim")


def _money(amount: float) -> str:
    return f"{amount:.4f}" if amount < 1 else f"{amount:.2f}"
