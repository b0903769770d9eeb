"""The retail domain's agent toolkit: look-ups, order modifications, returns and exchanges.

Every precondition is checked in the reference's order (the first failing check decides the error
text) and all checks precede all writes except where a partial mutation is documented.
"""

from __future__ import annotations

import json

from collapse_probe.benchmarks.tau2._db import (
    Address,
    Order,
    OrderItem,
    OrderPayment,
    PaymentMethod,
    Product,
    RetailTables,
    RetailUser,
    Variant,
)
from collapse_probe.benchmarks.tau2._tools import (
    STR,
    STR_LIST,
    STRING,
    ToolError,
    Toolkit,
    build_record,
    describe,
    tool,
)

_ORDER_ID = describe(STR, "The order id, such as '#W0000000' (with the leading '#').")
_USER_ID = describe(STR, "The user id, such as 'sara_doe_496'.")
_PM_ID = describe(STR, "The payment method id, such as 'gift_card_0000000' or 'credit_card_0000000'.")

_ADDRESS_FIELDS = [(k, STRING) for k in ("address1", "address2", "city", "country", "state", "zip")]
_ADDRESS_PARAMS = {
    "address1": describe(STR, "The first line of the address, such as '123 Main St'."),
    "address2": describe(STR, "The second line of the address, such as 'Apt 1' or ''."),
    "city": describe(STR, "The city, such as 'San Francisco'."),
    "state": describe(STR, "The state, such as 'CA'."),
    "country": describe(STR, "The country, such as 'USA'."),
    "zip": describe(STR, "The zip code, such as '12345'."),
}


def _user_address(address1: str, address2: str, city: str, country: str, state: str, zip: str) -> Address:  # noqa: A002
    """The address the agent gave, after the reference's check that every line is a string."""
    address: Address = {
        "address1": address1,
        "address2": address2,
        "city": city,
        "country": country,
        "state": state,
        "zip": zip,
    }
    build_record("UserAddress", _ADDRESS_FIELDS, address)  # raises listing every line that is not a string
    return address


def _r2(x: float) -> float:
    return round(x, 2)


class RetailTools(Toolkit[RetailTables]):
    """The retail agent's 16 tools over a retail :class:`~collapse_probe.benchmarks.tau2._db.Database`."""

    kind = "retail"

    # ---- helpers ---------------------------------------------------------------------------

    def _order(self, order_id: str) -> Order:
        if order_id not in self.db.tables["orders"]:
            raise ToolError("Order not found")
        return self.db.tables["orders"][order_id]

    def _user(self, user_id: str) -> RetailUser:
        if user_id not in self.db.tables["users"]:
            raise ToolError("User not found")
        return self.db.tables["users"][user_id]

    def _product(self, product_id: str) -> Product:
        if product_id not in self.db.tables["products"]:
            raise ToolError("Product not found")
        return self.db.tables["products"][product_id]

    def _item(self, item_id: str) -> Variant:
        for product in self.db.tables["products"].values():
            if item_id in product["variants"]:
                return product["variants"][item_id]
        raise ToolError("Item not found")

    def _variant(self, product_id: str, item_id: str) -> Variant:
        product = self._product(product_id)
        if item_id not in product["variants"]:
            raise ToolError("Variant not found")
        return product["variants"][item_id]

    def _payment_method(self, user_id: str, payment_method_id: str) -> PaymentMethod:
        user = self._user(user_id)
        if payment_method_id not in user["payment_methods"]:
            raise ToolError("Payment method not found")
        return user["payment_methods"][payment_method_id]

    def _writable_payment_method(self, user_id: str, payment_method_id: str) -> PaymentMethod:
        self._payment_method(user_id, payment_method_id)
        return self._writable_user(user_id)["payment_methods"][payment_method_id]

    def _writable_user(self, user_id: str) -> RetailUser:
        self.db.own("users", user_id)
        return self.db.tables["users"][user_id]

    def _writable_order(self, order_id: str) -> Order:
        self.db.own("orders", order_id)
        return self.db.tables["orders"][order_id]

    @staticmethod
    def _count_check(order: Order, item_ids: list[str], message: str) -> None:
        all_ids = [it["item_id"] for it in order["items"]]
        for item_id in item_ids:
            if item_ids.count(item_id) > all_ids.count(item_id):
                raise ToolError(message.format(item_id=item_id))

    @staticmethod
    def _first_item(order: Order, item_id: str) -> OrderItem:
        for it in order["items"]:
            if it["item_id"] == item_id:
                return it
        raise ToolError(f"Item {item_id} not found")

    # ---- read tools ------------------------------------------------------------------------

    @tool(
        "read",
        "Find a user id by email. If not found, an error is returned.",
        email=describe(STR, "The email of the user, such as 'something@example.com'."),
    )
    def find_user_id_by_email(self, email: str) -> str:
        for user_id, user in self.db.tables["users"].items():
            if user["email"].lower() == email.lower():
                return user_id
        raise ToolError("User not found")

    @tool(
        "read",
        "Find a user id by first name, last name and zip code. If not found, an error is returned.",
        first_name=describe(STR, "The first name of the customer, such as 'John'."),
        last_name=describe(STR, "The last name of the customer, such as 'Doe'."),
        zip=describe(STR, "The zip code of the customer, such as '12345'."),
    )
    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:  # noqa: A002 - tool argument name
        for user_id, user in self.db.tables["users"].items():
            if (
                user["name"]["first_name"].lower() == first_name.lower()
                and user["name"]["last_name"].lower() == last_name.lower()
                and user["address"]["zip"] == zip
            ):
                return user_id
        raise ToolError("User not found")

    @tool("read", "Get the status and details of an order.", order_id=_ORDER_ID)
    def get_order_details(self, order_id: str) -> Order:
        return self._order(order_id)

    @tool(
        "read",
        "Get the inventory details of a product: its name and every variant with options, availability and price.",
        product_id=describe(STR, "The product id, such as '6086499569' (different from an item id)."),
    )
    def get_product_details(self, product_id: str) -> Product:
        return self._product(product_id)

    @tool(
        "read",
        "Get the details of one item (a product variant): options, availability and price.",
        item_id=describe(STR, "The item id, such as '6086499569'."),
    )
    def get_item_details(self, item_id: str) -> Variant:
        return self._item(item_id)

    @tool("read", "Get the details of a user, including their orders and payment methods.", user_id=_USER_ID)
    def get_user_details(self, user_id: str) -> RetailUser:
        return self._user(user_id)

    @tool("read", "List the name and product id of every product type in the store.")
    def list_all_product_types(self) -> str:
        by_name = {p["name"]: p["product_id"] for p in self.db.tables["products"].values()}
        return json.dumps(dict(sorted(by_name.items())))

    # ---- write tools -----------------------------------------------------------------------

    @tool(
        "write",
        "Cancel a pending order. The refund goes to the original payment method (immediately for gift cards, "
        "5-7 business days otherwise). Only with explicit customer confirmation.",
        order_id=_ORDER_ID,
        reason=describe(
            {"type": "string", "enum": ["no longer needed", "ordered by mistake"]},
            "The reason for cancellation: 'no longer needed' or 'ordered by mistake'.",
        ),
    )
    def cancel_pending_order(self, order_id: str, reason: str) -> Order:
        order = self._order(order_id)
        if order["status"] != "pending":
            raise ToolError("Non-pending order cannot be cancelled")
        if reason not in ("no longer needed", "ordered by mistake"):
            raise ToolError("Invalid reason")
        refunds: list[OrderPayment] = []
        for payment in list(order["payment_history"]):
            refunds.append(
                {
                    "transaction_type": "refund",
                    "amount": payment["amount"],
                    "payment_method_id": payment["payment_method_id"],
                }
            )
            pm = self._payment_method(order["user_id"], payment["payment_method_id"])
            if pm["source"] == "gift_card":
                pm = self._writable_payment_method(order["user_id"], payment["payment_method_id"])
                pm["balance"] = _r2(pm["balance"] + payment["amount"])
        order = self._writable_order(order_id)
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        order["payment_history"].extend(refunds)
        return order

    @tool(
        "write",
        "Exchange items of a delivered order for new items of the same product types. The price difference is "
        "paid or refunded with the given payment method. Can be done only once per order; collect every item to "
        "exchange first. Only with explicit customer confirmation.",
        order_id=_ORDER_ID,
        item_ids=describe(STR_LIST, "The item ids to be exchanged, each such as '1008292230'; may repeat."),
        new_item_ids=describe(
            STR_LIST, "The new item ids, same length and order as item_ids, each of the same product."
        ),
        payment_method_id=_PM_ID,
    )
    def exchange_delivered_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> Order:
        order = self._order(order_id)
        if order["status"] != "delivered":
            raise ToolError("Non-delivered order cannot be exchanged")
        self._count_check(order, item_ids, "Number of {item_id} not found.")
        if len(item_ids) != len(new_item_ids):
            raise ToolError("The number of items to be exchanged should match.")
        diff: float = 0
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
            old = self._first_item(order, item_id)
            variant = self._variant(old["product_id"], new_item_id)
            if not variant["available"]:
                raise ToolError(f"New item {new_item_id} not found or available")
            diff = diff + (variant["price"] - old["price"])
        diff = round(diff, 2)
        pm = self._payment_method(order["user_id"], payment_method_id)
        if pm["source"] == "gift_card" and pm["balance"] < diff:
            raise ToolError("Insufficient gift card balance to pay for the price difference")
        order = self._writable_order(order_id)
        order["status"] = "exchange requested"
        order["exchange_items"] = sorted(item_ids)
        order["exchange_new_items"] = sorted(new_item_ids)
        order["exchange_payment_method_id"] = payment_method_id
        order["exchange_price_difference"] = diff
        return order

    @tool(
        "write",
        "Change the shipping address of a pending order. Only with explicit customer confirmation.",
        order_id=_ORDER_ID,
        **_ADDRESS_PARAMS,
    )
    def modify_pending_order_address(
        self,
        order_id: str,
        address1: str,
        address2: str,
        city: str,
        state: str,
        country: str,
        zip: str,  # noqa: A002
    ) -> Order:
        order = self._order(order_id)
        if "pending" not in order["status"]:
            raise ToolError("Non-pending order cannot be modified")
        address = _user_address(address1, address2, city, country, state, zip)
        order = self._writable_order(order_id)
        order["address"] = address
        return order

    @tool(
        "write",
        "Modify items of a pending order to other variants of the same products. The price difference is paid or "
        "refunded with the given payment method. Can be done only once per order; collect every item to modify "
        "first. Only with explicit customer confirmation.",
        order_id=_ORDER_ID,
        item_ids=describe(STR_LIST, "The item ids to be modified, each such as '1008292230'; may repeat."),
        new_item_ids=describe(
            STR_LIST, "The new item ids, same length and order as item_ids, each of the same product."
        ),
        payment_method_id=_PM_ID,
    )
    def modify_pending_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> Order:
        order = self._order(order_id)
        if order["status"] != "pending":
            raise ToolError("Non-pending order cannot be modified")
        self._count_check(order, item_ids, "{item_id} not found")
        if len(item_ids) != len(new_item_ids):
            raise ToolError("The number of items to be exchanged should match")
        diff: float = 0
        variant: Variant | None = None
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
            if item_id == new_item_id:
                raise ToolError("The new item id should be different from the old item id")
            old = self._first_item(order, item_id)
            variant = self._variant(old["product_id"], new_item_id)
            if not variant["available"]:
                raise ToolError(f"New item {new_item_id} not found or available")
            diff = diff + (variant["price"] - old["price"])
        pm = self._payment_method(order["user_id"], payment_method_id)
        if pm["source"] == "gift_card" and pm["balance"] < diff:
            raise ToolError("Insufficient gift card balance to pay for the new item")
        order = self._writable_order(order_id)
        order["payment_history"].append(
            {
                "transaction_type": "payment" if diff > 0 else "refund",
                "amount": float(abs(diff)),
                "payment_method_id": payment_method_id,
            }
        )
        if pm["source"] == "gift_card":
            pm = self._writable_payment_method(order["user_id"], payment_method_id)
            pm["balance"] = _r2(pm["balance"] - diff)
        # Reference behaviour: every modified item takes the price and options of the LAST new variant.
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
            item = self._first_item(order, item_id)
            item["item_id"] = new_item_id
            assert variant is not None
            item["price"] = variant["price"]
            item["options"] = dict(variant["options"])
        order["status"] = "pending (item modified)"
        return order

    @tool(
        "write",
        "Change the payment method of a pending order. Only with explicit customer confirmation.",
        order_id=_ORDER_ID,
        payment_method_id=_PM_ID,
    )
    def modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> Order:
        order = self._order(order_id)
        if "pending" not in order["status"]:
            raise ToolError("Non-pending order cannot be modified")
        new_pm = self._payment_method(order["user_id"], payment_method_id)
        history = order["payment_history"]
        if len(history) != 1 or history[0]["transaction_type"] != "payment":
            raise ToolError("There should be exactly one payment for a pending order")
        old_id = history[0]["payment_method_id"]
        if old_id == payment_method_id:
            raise ToolError("The new payment method should be different from the current one")
        amount = history[0]["amount"]
        if new_pm["source"] == "gift_card" and new_pm["balance"] < amount:
            raise ToolError("Insufficient gift card balance to pay for the order")
        order = self._writable_order(order_id)
        order["payment_history"].extend(
            [
                {"transaction_type": "payment", "amount": amount, "payment_method_id": payment_method_id},
                {"transaction_type": "refund", "amount": amount, "payment_method_id": old_id},
            ]
        )
        if new_pm["source"] == "gift_card":
            new_pm = self._writable_payment_method(order["user_id"], payment_method_id)
            new_pm["balance"] = _r2(new_pm["balance"] - amount)
        old_pm = self._payment_method(order["user_id"], old_id)  # may fail after the writes (partial mutation)
        if old_pm["source"] == "gift_card":
            old_pm = self._writable_payment_method(order["user_id"], old_id)
            old_pm["balance"] = _r2(old_pm["balance"] + amount)
        return order

    @tool(
        "write",
        "Change the default address of a user. Only with explicit customer confirmation.",
        user_id=_USER_ID,
        **_ADDRESS_PARAMS,
    )
    def modify_user_address(
        self,
        user_id: str,
        address1: str,
        address2: str,
        city: str,
        state: str,
        country: str,
        zip: str,  # noqa: A002
    ) -> RetailUser:
        self._user(user_id)
        address = _user_address(address1, address2, city, country, state, zip)
        user = self._writable_user(user_id)
        user["address"] = address
        return user

    @tool(
        "write",
        "Return items of a delivered order. The refund goes to the original payment method or an existing gift "
        "card. Only with explicit customer confirmation.",
        order_id=_ORDER_ID,
        item_ids=describe(STR_LIST, "The item ids to be returned, each such as '1008292230'; may repeat."),
        payment_method_id=describe(
            STR, "The payment method for the refund: the original one or a gift card of the user."
        ),
    )
    def return_delivered_order_items(self, order_id: str, item_ids: list[str], payment_method_id: str) -> Order:
        order = self._order(order_id)
        if order["status"] != "delivered":
            raise ToolError("Non-delivered order cannot be returned")
        pm = self._payment_method(order["user_id"], payment_method_id)
        if pm["source"] != "gift_card" and payment_method_id != order["payment_history"][0]["payment_method_id"]:
            raise ToolError("Payment method should be the original payment method")
        self._count_check(order, item_ids, "Some item not found")
        order = self._writable_order(order_id)
        order["status"] = "return requested"
        order["return_items"] = sorted(item_ids)
        order["return_payment_method_id"] = payment_method_id
        return order


def retail_tool_names() -> list[str]:
    """Names of the retail tools in declaration order."""
    return list(RetailTools.specs)
