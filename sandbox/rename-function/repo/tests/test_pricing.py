from shop.pricing import calc_total, line_price


def test_line_price():
    assert line_price(250, 4) == 1000


def test_total_without_tax():
    assert calc_total([(100, 2), (50, 1)]) == 250


def test_total_with_tax():
    assert calc_total([(1000, 1)], tax_rate=0.2) == 1200
