from inventory import Inventory


def test_add_remove():
    inv = Inventory()
    inv.add("apple", 3, 0.5)
    inv.remove("apple", 1)
    assert inv.items["apple"] == (2, 0.5)
    inv.remove("apple", 2)
    assert "apple" not in inv.items
