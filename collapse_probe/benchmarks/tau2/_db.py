"""The τ2 databases: canonical typed form, copy-on-write environments and the DB hash.

A database is three tables of JSON records (retail: ``products``, ``users``, ``orders``; airline:
``flights``, ``users``, ``reservations``). Loading puts every record into its *canonical* form: every
schema field present in schema order, absent optional fields as ``None``, money fields with their
schema number type (retail prices and balances and airline gift-card / certificate amounts become
floats; airline prices and payments stay integers). Equality of two databases is the SHA-256 of the
canonical dump with sorted keys, so key order never matters but list order and ``0`` vs ``0.0`` do.

:class:`Database` is a copy-on-write view over a shared, read-only base: a fresh environment
costs one shallow copy per table, and a tool that mutates a record first asks for a private copy
with :meth:`Database.writable`. This keeps many concurrent episodes cheap.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, Generic, Required, TypedDict, TypeVar, cast, final

from collapse_probe.errors import ConfigError

# --------------------------------------------------------------------------------------------------
# the canonical rows (what a tool reads and writes; the agent sees them as JSON in this key order)


class Name(TypedDict):
    first_name: str
    last_name: str


class Address(TypedDict):
    address1: str
    address2: str | None
    """``None`` only in the airline database, where the line is optional."""
    city: str
    country: str
    state: str
    zip: str


class PaymentMethod(TypedDict, total=False):
    """A user's payment method; which optional keys it has depends on ``source``."""

    source: Required[str]
    """``credit_card``, ``paypal`` (retail), ``gift_card`` or ``certificate`` (airline)."""
    id: Required[str]
    brand: str
    """Credit cards only."""
    last_four: str
    """Credit cards only."""
    balance: float
    """Retail gift cards only."""
    amount: float
    """Airline gift cards and certificates only."""


class Variant(TypedDict):
    """One item (a product variant) of the retail catalogue."""

    item_id: str
    options: dict[str, str]
    available: bool
    price: float


class Product(TypedDict):
    name: str
    product_id: str
    variants: dict[str, Variant]
    """Item id -> variant."""


class RetailUser(TypedDict):
    user_id: str
    name: Name
    address: Address
    email: str
    payment_methods: dict[str, PaymentMethod]
    """Payment method id -> method."""
    orders: list[str]
    """Order ids."""


class OrderItem(TypedDict):
    name: str
    product_id: str
    item_id: str
    price: float
    options: dict[str, str]


class Fulfillment(TypedDict):
    tracking_id: list[str]
    item_ids: list[str]


class OrderPayment(TypedDict):
    transaction_type: str
    """``payment`` or ``refund``."""
    amount: float
    payment_method_id: str


class Order(TypedDict):
    order_id: str
    user_id: str
    address: Address
    items: list[OrderItem]
    status: str
    """One of :data:`ORDER_STATUSES`."""
    fulfillments: list[Fulfillment]
    payment_history: list[OrderPayment]
    cancel_reason: str | None
    exchange_items: list[str] | None
    exchange_new_items: list[str] | None
    exchange_payment_method_id: str | None
    exchange_price_difference: float | None
    return_items: list[str] | None
    return_payment_method_id: str | None


@final
class RetailTables(TypedDict):
    """A retail database (db.json layout): id -> row per table."""

    products: dict[str, Product]
    users: dict[str, RetailUser]
    orders: dict[str, Order]


class FlightDate(TypedDict, total=False):
    """A flight's state on one date; the keys besides ``status`` depend on it (``_FLIGHT_DATE_FIELDS``)."""

    status: Required[str]
    available_seats: dict[str, int]
    """Cabin -> seats left (``available`` only)."""
    prices: dict[str, int]
    """Cabin -> price (``available`` only)."""
    actual_departure_time_est: str
    actual_arrival_time_est: str
    estimated_departure_time_est: str
    estimated_arrival_time_est: str


class Flight(TypedDict):
    flight_number: str
    origin: str
    destination: str
    scheduled_departure_time_est: str
    scheduled_arrival_time_est: str
    dates: dict[str, FlightDate]
    """``YYYY-MM-DD`` -> the flight on that date."""


class Passenger(TypedDict):
    first_name: str
    last_name: str
    dob: str


class AirlineUser(TypedDict):
    user_id: str
    name: Name
    address: Address
    email: str
    dob: str
    payment_methods: dict[str, PaymentMethod]
    """Payment method id -> method."""
    saved_passengers: list[Passenger]
    membership: str
    """``gold``, ``silver`` or ``regular``."""
    reservations: list[str]
    """Reservation ids."""


class ReservationFlight(TypedDict):
    flight_number: str
    origin: str
    destination: str
    date: str
    price: int


class ReservationPayment(TypedDict):
    payment_id: str
    amount: int
    """Negative for a refund."""


class Reservation(TypedDict):
    reservation_id: str
    user_id: str
    origin: str
    destination: str
    flight_type: str
    """``round_trip`` or ``one_way``."""
    cabin: str
    """``business``, ``economy`` or ``basic_economy``."""
    flights: list[ReservationFlight]
    passengers: list[Passenger]
    payment_history: list[ReservationPayment]
    created_at: str
    total_baggages: int
    nonfree_baggages: int
    insurance: str
    """``yes`` or ``no``."""
    status: str | None
    """``None`` or ``cancelled``."""


@final
class AirlineTables(TypedDict):
    """An airline database (db.json layout): id -> row per table."""

    flights: dict[str, Flight]
    users: dict[str, AirlineUser]
    reservations: dict[str, Reservation]


Tables = RetailTables | AirlineTables
"""A canonical database of either kind."""
TablesT = TypeVar("TablesT", RetailTables, AirlineTables)

TABLES: dict[str, tuple[str, ...]] = {
    "retail": ("products", "users", "orders"),
    "airline": ("flights", "users", "reservations"),
}
"""Top-level tables of each domain kind, in db.json order."""


def copy_json(x: Any) -> Any:
    """Deep copy of a JSON-like value (dicts, lists, scalars); faster than :func:`copy.deepcopy`."""
    if isinstance(x, dict):
        return {k: copy_json(v) for k, v in x.items()}
    if isinstance(x, list):
        return [copy_json(v) for v in x]
    return x


def canonical_json(value: Any) -> str:
    """The DB-comparison serialisation: all object keys sorted, ``json.dumps`` number formatting."""
    return json.dumps(value, sort_keys=True)


def record_json(value: Any) -> str:
    """Tool-output serialisation: schema key order, ``", "`` / ``": "`` separators, ASCII escapes."""
    return json.dumps(value)


# --------------------------------------------------------------------------------------------------
# canonicalisation (load-time typing)


class _Where:
    """Names the file and field in load errors."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, expected: str, got: Any) -> ConfigError:
        return ConfigError(f"{self.source}: field {path!r}: expected {expected}, got {got!r:.80}")


def _get(rec: Any, key: str, path: str, w: _Where, optional: bool = False) -> Any:
    if not isinstance(rec, dict):
        raise w.fail(path, "an object", rec)
    if key not in rec:
        if optional:
            return None
        raise w.fail(f"{path}.{key}", "a value (the field is required)", None)
    return rec[key]


def _opt_str(rec: Any, key: str, path: str, w: _Where, optional: bool = True) -> str | None:
    v = _get(rec, key, path, w, optional)
    if v is None and optional:
        return None
    if not isinstance(v, str):
        raise w.fail(f"{path}.{key}", "a string", v)
    return v


def _str(rec: Any, key: str, path: str, w: _Where) -> str:
    v = _get(rec, key, path, w)
    if not isinstance(v, str):
        raise w.fail(f"{path}.{key}", "a string", v)
    return v


def _opt_float(rec: Any, key: str, path: str, w: _Where) -> float | None:
    v = _get(rec, key, path, w, optional=True)
    return None if v is None else _float(rec, key, path, w)


def _float(rec: Any, key: str, path: str, w: _Where) -> float:
    v = _get(rec, key, path, w)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise w.fail(f"{path}.{key}", "a number", v)
    return float(v)


def _int(rec: Any, key: str, path: str, w: _Where) -> int:
    v = _get(rec, key, path, w)
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise w.fail(f"{path}.{key}", "an integer", v)
    return v


def _opt_str_list(rec: Any, key: str, path: str, w: _Where) -> list[str] | None:
    v = _get(rec, key, path, w, optional=True)
    return None if v is None else _str_list(rec, key, path, w)


def _str_list(rec: Any, key: str, path: str, w: _Where) -> list[str]:
    v = _get(rec, key, path, w)
    if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
        raise w.fail(f"{path}.{key}", "a list of strings", v)
    return list(v)


def _str_map(rec: Any, key: str, path: str, w: _Where) -> dict[str, str]:
    v = _get(rec, key, path, w)
    if not isinstance(v, dict) or not all(isinstance(s, str) for s in v.values()):
        raise w.fail(f"{path}.{key}", "an object of strings", v)
    return dict(v)


def _int_map(rec: Any, key: str, path: str, w: _Where) -> dict[str, int]:
    v = _get(rec, key, path, w)
    if not isinstance(v, dict):
        raise w.fail(f"{path}.{key}", "an object of integers", v)
    return {k: _int(v, k, f"{path}.{key}", w) for k in v}


def _enum(rec: Any, key: str, path: str, w: _Where, allowed: tuple[str | None, ...]) -> Any:
    v = _get(rec, key, path, w, optional=None in allowed)
    if v not in allowed:
        raise w.fail(f"{path}.{key}", "one of " + ", ".join(repr(a) for a in allowed), v)
    return v


def _name(rec: Any, path: str, w: _Where) -> Name:
    n = _get(rec, "name", path, w)
    return {
        "first_name": _str(n, "first_name", path + ".name", w),
        "last_name": _str(n, "last_name", path + ".name", w),
    }


def _address(rec: Any, path: str, w: _Where, address2_optional: bool) -> Address:
    a = _get(rec, "address", path, w)
    p = path + ".address"
    return {
        "address1": _str(a, "address1", p, w),
        "address2": _opt_str(a, "address2", p, w, optional=address2_optional),
        "city": _str(a, "city", p, w),
        "country": _str(a, "country", p, w),
        "state": _str(a, "state", p, w),
        "zip": _str(a, "zip", p, w),
    }


def _payment_method(pm: Any, path: str, w: _Where, kind: str) -> PaymentMethod:
    source = _get(pm, "source", path, w)
    out: PaymentMethod = {"source": source, "id": _str(pm, "id", path, w)}
    if source == "credit_card":
        out["brand"] = _str(pm, "brand", path, w)
        out["last_four"] = _str(pm, "last_four", path, w)
    elif kind == "retail" and source == "paypal":
        pass
    elif kind == "retail" and source == "gift_card":
        out["balance"] = _float(pm, "balance", path, w)
    elif kind == "airline" and source in ("gift_card", "certificate"):
        out["amount"] = _float(pm, "amount", path, w)
    else:
        allowed = "credit_card, paypal, gift_card" if kind == "retail" else "credit_card, gift_card, certificate"
        raise w.fail(path + ".source", f"one of {allowed}", source)
    return out


def _table(db: dict[str, object], name: str, w: _Where) -> dict[str, object]:
    t = db.get(name)
    if not isinstance(t, dict):
        raise w.fail(name, "an object mapping ids to records", t)
    return t


def _check_top(db: Any, kind: str, w: _Where) -> None:
    if not isinstance(db, dict):
        raise ConfigError(f"{w.source}: expected a JSON object with tables {', '.join(TABLES[kind])}")
    extra = sorted(set(db) - set(TABLES[kind]))
    missing = [t for t in TABLES[kind] if t not in db]
    if extra or missing:
        raise ConfigError(
            f"{w.source}: expected exactly the top-level keys {', '.join(TABLES[kind])}"
            + (f"; unexpected: {', '.join(extra)}" if extra else "")
            + (f"; missing: {', '.join(missing)}" if missing else "")
        )


ORDER_STATUSES = (
    "processed",
    "pending",
    "pending (item modified)",
    "delivered",
    "cancelled",
    "exchange requested",
    "return requested",
)


def canonical_retail(db: Any, source: str = "retail db") -> RetailTables:
    """Type a retail database (db.json layout) into canonical form; errors name the field."""
    w = _Where(source)
    _check_top(db, "retail", w)
    products: dict[str, Product] = {}
    for pid, p in _table(db, "products", w).items():
        path = f"products.{pid}"
        variants: dict[str, Variant] = {}
        for iid, v in _get(p, "variants", path, w).items():
            vp = f"{path}.variants.{iid}"
            av = _get(v, "available", vp, w)
            if not isinstance(av, bool):
                raise w.fail(vp + ".available", "a boolean", av)
            variants[iid] = {
                "item_id": _str(v, "item_id", vp, w),
                "options": _str_map(v, "options", vp, w),
                "available": av,
                "price": _float(v, "price", vp, w),
            }
        products[pid] = {
            "name": _str(p, "name", path, w),
            "product_id": _str(p, "product_id", path, w),
            "variants": variants,
        }
    users: dict[str, RetailUser] = {}
    for uid, u in _table(db, "users", w).items():
        path = f"users.{uid}"
        pms = _get(u, "payment_methods", path, w)
        users[uid] = {
            "user_id": _str(u, "user_id", path, w),
            "name": _name(u, path, w),
            "address": _address(u, path, w, address2_optional=False),
            "email": _str(u, "email", path, w),
            "payment_methods": {
                k: _payment_method(v, f"{path}.payment_methods.{k}", w, "retail") for k, v in pms.items()
            },
            "orders": _str_list(u, "orders", path, w),
        }
    orders: dict[str, Order] = {}
    for oid, o in _table(db, "orders", w).items():
        path = f"orders.{oid}"
        items: list[OrderItem] = []
        for i, it in enumerate(_get(o, "items", path, w)):
            ip = f"{path}.items[{i}]"
            items.append(
                {
                    "name": _str(it, "name", ip, w),
                    "product_id": _str(it, "product_id", ip, w),
                    "item_id": _str(it, "item_id", ip, w),
                    "price": _float(it, "price", ip, w),
                    "options": _str_map(it, "options", ip, w),
                }
            )
        fulfillments: list[Fulfillment] = []
        for i, f in enumerate(_get(o, "fulfillments", path, w)):
            fp = f"{path}.fulfillments[{i}]"
            fulfillments.append(
                {"tracking_id": _str_list(f, "tracking_id", fp, w), "item_ids": _str_list(f, "item_ids", fp, w)}
            )
        history: list[OrderPayment] = []
        for i, ph in enumerate(_get(o, "payment_history", path, w)):
            hp = f"{path}.payment_history[{i}]"
            history.append(
                {
                    "transaction_type": _enum(ph, "transaction_type", hp, w, ("payment", "refund")),
                    "amount": _float(ph, "amount", hp, w),
                    "payment_method_id": _str(ph, "payment_method_id", hp, w),
                }
            )
        orders[oid] = {
            "order_id": _str(o, "order_id", path, w),
            "user_id": _str(o, "user_id", path, w),
            "address": _address(o, path, w, address2_optional=False),
            "items": items,
            "status": _enum(o, "status", path, w, ORDER_STATUSES),
            "fulfillments": fulfillments,
            "payment_history": history,
            "cancel_reason": _enum(o, "cancel_reason", path, w, (None, "no longer needed", "ordered by mistake")),
            "exchange_items": _opt_str_list(o, "exchange_items", path, w),
            "exchange_new_items": _opt_str_list(o, "exchange_new_items", path, w),
            "exchange_payment_method_id": _opt_str(o, "exchange_payment_method_id", path, w),
            "exchange_price_difference": _opt_float(o, "exchange_price_difference", path, w),
            "return_items": _opt_str_list(o, "return_items", path, w),
            "return_payment_method_id": _opt_str(o, "return_payment_method_id", path, w),
        }
    return {"products": products, "users": users, "orders": orders}


_FLIGHT_DATE_FIELDS: dict[str, tuple[str, ...]] = {
    "available": ("available_seats", "prices"),
    "landed": ("actual_departure_time_est", "actual_arrival_time_est"),
    "cancelled": (),
    "delayed": ("estimated_departure_time_est", "estimated_arrival_time_est"),
    "flying": ("actual_departure_time_est", "estimated_arrival_time_est"),
    "on time": ("estimated_departure_time_est", "estimated_arrival_time_est"),
}


def _passenger(p: Any, path: str, w: _Where) -> Passenger:
    return {
        "first_name": _str(p, "first_name", path, w),
        "last_name": _str(p, "last_name", path, w),
        "dob": _str(p, "dob", path, w),
    }


def _flight_date(fd: Any, status: str, dp: str, w: _Where) -> FlightDate:
    """A flight's date with the fields its ``status`` has, in schema order."""
    rec: FlightDate = {"status": status}
    for k in _FLIGHT_DATE_FIELDS[status]:
        if k == "available_seats":
            rec["available_seats"] = _int_map(fd, k, dp, w)
        elif k == "prices":
            rec["prices"] = _int_map(fd, k, dp, w)
        elif k == "actual_departure_time_est":
            rec["actual_departure_time_est"] = _str(fd, k, dp, w)
        elif k == "actual_arrival_time_est":
            rec["actual_arrival_time_est"] = _str(fd, k, dp, w)
        elif k == "estimated_departure_time_est":
            rec["estimated_departure_time_est"] = _str(fd, k, dp, w)
        else:
            rec["estimated_arrival_time_est"] = _str(fd, k, dp, w)
    return rec


def canonical_airline(db: Any, source: str = "airline db") -> AirlineTables:
    """Type an airline database (db.json layout) into canonical form; errors name the field."""
    w = _Where(source)
    _check_top(db, "airline", w)
    flights: dict[str, Flight] = {}
    for fn, f in _table(db, "flights", w).items():
        path = f"flights.{fn}"
        dates: dict[str, FlightDate] = {}
        for d, fd in _get(f, "dates", path, w).items():
            dp = f"{path}.dates.{d}"
            status = _enum(fd, "status", dp, w, tuple(_FLIGHT_DATE_FIELDS))
            dates[d] = _flight_date(fd, status, dp, w)
        flights[fn] = {
            "flight_number": _str(f, "flight_number", path, w),
            "origin": _str(f, "origin", path, w),
            "destination": _str(f, "destination", path, w),
            "scheduled_departure_time_est": _str(f, "scheduled_departure_time_est", path, w),
            "scheduled_arrival_time_est": _str(f, "scheduled_arrival_time_est", path, w),
            "dates": dates,
        }
    users: dict[str, AirlineUser] = {}
    for uid, u in _table(db, "users", w).items():
        path = f"users.{uid}"
        pms = _get(u, "payment_methods", path, w)
        users[uid] = {
            "user_id": _str(u, "user_id", path, w),
            "name": _name(u, path, w),
            "address": _address(u, path, w, address2_optional=True),
            "email": _str(u, "email", path, w),
            "dob": _str(u, "dob", path, w),
            "payment_methods": {
                k: _payment_method(v, f"{path}.payment_methods.{k}", w, "airline") for k, v in pms.items()
            },
            "saved_passengers": [
                _passenger(p, f"{path}.saved_passengers[{i}]", w)
                for i, p in enumerate(_get(u, "saved_passengers", path, w))
            ],
            "membership": _enum(u, "membership", path, w, ("gold", "silver", "regular")),
            "reservations": _str_list(u, "reservations", path, w),
        }
    reservations: dict[str, Reservation] = {}
    for rid, r in _table(db, "reservations", w).items():
        path = f"reservations.{rid}"
        rflights: list[ReservationFlight] = []
        for i, rf in enumerate(_get(r, "flights", path, w)):
            fp = f"{path}.flights[{i}]"
            rflights.append(
                {
                    "flight_number": _str(rf, "flight_number", fp, w),
                    "origin": _str(rf, "origin", fp, w),
                    "destination": _str(rf, "destination", fp, w),
                    "date": _str(rf, "date", fp, w),
                    "price": _int(rf, "price", fp, w),
                }
            )
        reservations[rid] = {
            "reservation_id": _str(r, "reservation_id", path, w),
            "user_id": _str(r, "user_id", path, w),
            "origin": _str(r, "origin", path, w),
            "destination": _str(r, "destination", path, w),
            "flight_type": _enum(r, "flight_type", path, w, ("round_trip", "one_way")),
            "cabin": _enum(r, "cabin", path, w, ("business", "economy", "basic_economy")),
            "flights": rflights,
            "passengers": [
                _passenger(p, f"{path}.passengers[{i}]", w) for i, p in enumerate(_get(r, "passengers", path, w))
            ],
            "payment_history": [
                {
                    "payment_id": _str(p, "payment_id", f"{path}.payment_history[{i}]", w),
                    "amount": _int(p, "amount", f"{path}.payment_history[{i}]", w),
                }
                for i, p in enumerate(_get(r, "payment_history", path, w))
            ],
            "created_at": _str(r, "created_at", path, w),
            "total_baggages": _int(r, "total_baggages", path, w),
            "nonfree_baggages": _int(r, "nonfree_baggages", path, w),
            "insurance": _enum(r, "insurance", path, w, ("yes", "no")),
            "status": _enum(r, "status", path, w, (None, "cancelled")),
        }
    return {"flights": flights, "users": users, "reservations": reservations}


CANONICALISERS: dict[str, Callable[[Any, str], Tables]] = {"retail": canonical_retail, "airline": canonical_airline}


def deep_merge(base: Any, update: Any) -> Any:
    """Merge ``update`` into ``base`` as τ2's initial state does: objects recursively, all else replaces."""
    if isinstance(base, dict) and isinstance(update, dict):
        out = dict(base)
        for k, v in update.items():
            out[k] = deep_merge(base[k], v) if k in base else copy_json(v)
        return out
    return copy_json(update)


# --------------------------------------------------------------------------------------------------
# copy-on-write database


class Database(Generic[TablesT]):
    """A copy-on-write view over read-only base tables.

    Args:
        kind: ``"retail"`` or ``"airline"``.
        base: canonical tables; never mutated through this view.
    """

    def __init__(self, kind: str, base: TablesT) -> None:
        self.kind = kind
        self._source: object = base
        self._base: dict[str, dict[str, object]] = {name: _rows(base, name) for name in TABLES[kind]}
        self._rows: dict[str, dict[str, object]] = {name: dict(self._base[name]) for name in TABLES[kind]}
        """Table -> id -> row: the tables the generic operations (copy-on-write, diff, hash) work on."""
        # the same dicts as ``_rows``, typed by the domain: a shallow copy of ``base``'s tables holds base's rows
        self.tables: TablesT = cast(TablesT, self._rows)
        self._owned: set[tuple[str, str]] = set()

    def own(self, table: str, key: str) -> None:
        """Make the record ``table[key]`` private to this view (a copy), so it can be changed in place
        through :attr:`tables` (raises ``KeyError`` if absent)."""
        if (table, key) not in self._owned:
            self._rows[table][key] = copy_json(self._rows[table][key])
            self._owned.add((table, key))

    def mark_inserted(self, table: str, key: str) -> None:
        """Record that ``table[key]`` was added (or replaced) through :attr:`tables`: it is owned by this view."""
        if key not in self._rows[table]:
            raise KeyError(key)
        self._owned.add((table, key))

    def changed(self) -> dict[str, list[str]]:
        """Per table, the ids of records that are new, removed or different from the base."""
        out: dict[str, list[str]] = {}
        for table, key in sorted(self._owned):
            base = self._base[table]
            cur = self._rows[table]
            if key not in cur or key not in base or canonical_json(cur[key]) != canonical_json(base[key]):
                out.setdefault(table, []).append(key)
        for table in self._rows:
            for key in self._base[table]:
                if key not in self._rows[table] and key not in out.get(table, []):
                    out.setdefault(table, []).append(key)
        return out

    def same_state(self, other: Database[RetailTables] | Database[AirlineTables]) -> bool:
        """Whether two views hold equal canonical dumps (the reward's DB equality).

        Views over the same base compare only the records either has written (an exact shortcut of
        comparing hashes); otherwise the hashes are compared.
        """
        if self._source is not other._source:
            return self.hash() == other.hash()
        for table in self._rows:
            if self._rows[table].keys() != other._rows[table].keys():
                return False
        keys = {k for k in self._owned | other._owned}
        for table, key in keys:
            a, b = self._rows[table].get(key), other._rows[table].get(key)
            if a is not b and canonical_json(a) != canonical_json(b):
                return False
        return True

    def dump(self) -> dict[str, dict[str, object]]:
        """An independent deep copy of the canonical tables (db.json layout: table -> id -> row)."""
        return copy_json(self._rows)

    def hash(self) -> str:
        """SHA-256 of the canonical dump with sorted keys (the reward's DB equality)."""
        return hashlib.sha256(canonical_json(self._rows).encode()).hexdigest()


def _rows(tables: RetailTables | AirlineTables, name: str) -> dict[str, object]:
    """Table ``name`` of canonical ``tables`` as id -> row."""
    table = dict(tables)[name]
    if not isinstance(table, dict):
        raise TypeError(f"table {name!r} is not an object")
    return table
