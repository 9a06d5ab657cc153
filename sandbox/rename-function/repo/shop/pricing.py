"""Prices of orders, in cents."""


def line_price(unit_cents: int, quantity: int) -> int:
    return unit_cents * quantity


def calc_total(lines, tax_rate: float = 0.0) -> int:
    """Total of (unit_cents, quantity) lines plus tax, rounded to the cent."""
    subtotal = sum(line_price(unit, qty) for unit, qty in lines)
    return round(subtotal * (1 + tax_rate))
