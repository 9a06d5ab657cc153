"""A cart of items, each a name, a unit price in cents and a quantity."""

from shop.pricing import calc_total


class Cart:
    def __init__(self, tax_rate: float = 0.0):
        self.tax_rate = tax_rate
        self.items: dict[str, tuple[int, int]] = {}

    def add(self, name: str, unit_cents: int, quantity: int = 1) -> None:
        unit, qty = self.items.get(name, (unit_cents, 0))
        self.items[name] = (unit, qty + quantity)

    def total(self) -> int:
        return calc_total(self.items.values(), self.tax_rate)
