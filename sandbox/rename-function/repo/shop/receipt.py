"""Plain-text receipts."""

from shop import pricing
from shop.cart import Cart


def format_cents(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


def receipt(cart: Cart) -> str:
    rows = [f"{name:<12} {qty:>3} x {format_cents(unit)}" for name, (unit, qty) in cart.items.items()]
    total = pricing.calc_total(cart.items.values(), cart.tax_rate)
    rows.append(f"{'TOTAL':<12} {format_cents(total):>10}")
    return "\n".join(rows)
