from shop.cart import Cart
from shop.receipt import receipt


def test_cart_total():
    cart = Cart(tax_rate=0.1)
    cart.add("tea", 300, 2)
    cart.add("tea", 300)
    assert cart.total() == 990


def test_receipt_ends_with_total():
    cart = Cart()
    cart.add("coffee", 425)
    assert receipt(cart).splitlines()[-1].endswith("4.25")
