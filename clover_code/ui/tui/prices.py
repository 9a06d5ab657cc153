"""What a session cost, from the prices per million tokens in the user's config
(`price_input_per_mtok`, `price_output_per_mtok`); none set, `/cost` shows no cost."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clover_code.settings import Settings


@dataclass(frozen=True)
class Prices:
    """Per million tokens, in the user's currency."""

    input: float
    output: float

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.input + tokens_out * self.output) / 1e6


def prices_of(settings: Settings) -> Prices | None:
    """The configured prices, or None when either is not set."""
    input_price, output_price = settings.price_input_per_mtok, settings.price_output_per_mtok
    if input_price is None or output_price is None:
        return None
    return Prices(float(input_price), float(output_price))
