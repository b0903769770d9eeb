"""A tiny stock-keeping class."""


class Inventory:
    """Item name -> (quantity, unit price)."""

    def __init__(self):
        self.items = {}

    def add(self, name, quantity, price):
        """Add ``quantity`` units of ``name`` at unit ``price`` (the price is updated)."""
        old = self.items.get(name, (0, price))[0]
        self.items[name] = (old + quantity, price)

    def remove(self, name, quantity):
        """Take ``quantity`` units of ``name`` out; the item disappears at zero."""
        left = self.items[name][0] - quantity
        if left <= 0:
            del self.items[name]
        else:
            self.items[name] = (left, self.items[name][1])
