"""The airline domain's agent toolkit: flight search, bookings, cancellations and updates.

The current time is fixed at ``2024-05-15T15:00:00`` EST and only used as the creation time of new
reservations; time-based rules (24-hour cancellation, flown segments) are policy the agent applies.
New reservation and certificate ids are deterministic, as in the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypedDict, cast

from collapse_probe.benchmarks.tau2._db import (
    AirlineTables,
    AirlineUser,
    Flight,
    FlightDate,
    PaymentMethod,
    Reservation,
    ReservationFlight,
    ReservationPayment,
)
from collapse_probe.benchmarks.tau2._tools import (
    FLOAT,
    INT,
    INTEGER,
    STR,
    STRING,
    Converter,
    ToolError,
    Toolkit,
    build_record,
    describe,
    enum,
    tool,
)

CURRENT_TIME = "2024-05-15T15:00:00"
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
AIRPORTS: tuple[tuple[str, str], ...] = (
    ("SFO", "San Francisco"),
    ("JFK", "New York"),
    ("LAX", "Los Angeles"),
    ("ORD", "Chicago"),
    ("DFW", "Dallas"),
    ("DEN", "Denver"),
    ("SEA", "Seattle"),
    ("ATL", "Atlanta"),
    ("MIA", "Miami"),
    ("BOS", "Boston"),
    ("PHX", "Phoenix"),
    ("IAH", "Houston"),
    ("LAS", "Las Vegas"),
    ("MCO", "Orlando"),
    ("EWR", "Newark"),
    ("CLT", "Charlotte"),
    ("MSP", "Minneapolis"),
    ("DTW", "Detroit"),
    ("PHL", "Philadelphia"),
    ("LGA", "LaGuardia"),
)
CABINS = ("business", "economy", "basic_economy")

_FLIGHT_INFO = [("flight_number", STRING), ("date", STRING)]
_PASSENGER = [("first_name", STRING), ("last_name", STRING), ("dob", STRING)]
_PAYMENT = [("payment_id", STRING), ("amount", INTEGER)]

_RESERVATION_ID = describe(STR, "The reservation id, such as '8JX2WO'.")
_USER_ID = describe(STR, "The user id, such as 'sara_doe_496'.")
_FLIGHTS = describe(
    {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "flight_number": describe(STR, "Flight number, such as 'HAT001'."),
                "date": describe(STR, "Date of the flight in YYYY-MM-DD, such as '2024-05-01'."),
            },
            "required": ["flight_number", "date"],
        },
    },
    "Every flight segment of the itinerary.",
)
_PASSENGERS = describe(
    {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"first_name": STR, "last_name": STR, "dob": describe(STR, "Date of birth, YYYY-MM-DD.")},
            "required": ["first_name", "last_name", "dob"],
        },
    },
    "The passengers.",
)
_CABIN = describe({"type": "string", "enum": list(CABINS)}, "The cabin class.")


def _convert_list(value: Any, record: str, fields: Sequence[tuple[str, Converter]]) -> Any:
    # As in the reference: convert only when every element is an object (vacuously true for []).
    if all(isinstance(x, dict) for x in value):
        return [build_record(record, fields, x) for x in value]
    return value


def _attr(x: Any, name: str) -> Any:
    if isinstance(x, dict):
        return x[name]
    raise AttributeError(f"'{type(x).__name__}' object has no attribute '{name}'")


class Airport(TypedDict):
    iata: str
    city: str


class FlightSearchResult(TypedDict):
    """A flight on one date as the search tools list it."""

    flight_number: str
    origin: str
    destination: str
    status: str
    scheduled_departure_time_est: str
    scheduled_arrival_time_est: str
    date: str | None
    available_seats: dict[str, int]
    prices: dict[str, int]


def _search_record(flight: Flight, day: FlightDate, date: str | None) -> FlightSearchResult:
    return {
        "flight_number": flight["flight_number"],
        "origin": flight["origin"],
        "destination": flight["destination"],
        "status": "available",
        "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
        "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"],
        "date": date,
        "available_seats": dict(day["available_seats"]),
        "prices": dict(day["prices"]),
    }


class AirlineTools(Toolkit[AirlineTables]):
    """The airline agent's 14 tools over an airline :class:`~collapse_probe.benchmarks.tau2._db.Database`."""

    kind = "airline"

    # ---- helpers ---------------------------------------------------------------------------

    def _user(self, user_id: str) -> AirlineUser:
        if user_id not in self.db.tables["users"]:
            raise ToolError(f"User {user_id} not found")
        return self.db.tables["users"][user_id]

    def _writable_user(self, user_id: str) -> AirlineUser:
        self.db.own("users", user_id)
        return self.db.tables["users"][user_id]

    def _writable_reservation(self, reservation_id: str) -> Reservation:
        self.db.own("reservations", reservation_id)
        return self.db.tables["reservations"][reservation_id]

    def _reservation(self, reservation_id: str) -> Reservation:
        if reservation_id not in self.db.tables["reservations"]:
            raise ToolError(f"Reservation {reservation_id} not found")
        return self.db.tables["reservations"][reservation_id]

    def _flight(self, flight_number: str) -> Flight:
        if flight_number not in self.db.tables["flights"]:
            raise ToolError(f"Flight {flight_number} not found")
        return self.db.tables["flights"][flight_number]

    def _flight_date(self, flight_number: str, date: str) -> FlightDate:
        flight = self._flight(flight_number)
        if date not in flight["dates"]:
            raise ToolError(f"Flight {flight_number} not found on date {date}")
        return flight["dates"][date]

    def _payment_for_update(self, user: AirlineUser, payment_id: str, price: int) -> ReservationPayment | None:
        """Checks, then the gift-card change; returns the Payment to record (``None`` for price 0)."""
        if payment_id not in user["payment_methods"]:
            raise ToolError("Payment method not found")
        pm = user["payment_methods"][payment_id]
        if pm["source"] == "certificate":
            raise ToolError("Certificate cannot be used to update reservation")
        if pm["source"] == "gift_card" and pm["amount"] < price:
            raise ToolError("Gift card balance is not enough")
        if pm["source"] == "gift_card":
            pm = self._writable_user(user["user_id"])["payment_methods"][payment_id]
            pm["amount"] = pm["amount"] - price
        return {"payment_id": payment_id, "amount": price} if price != 0 else None

    # ---- read tools ------------------------------------------------------------------------

    @tool(
        "read",
        "Get the details of a user: profile, payment methods, saved passengers, reservation ids.",
        user_id=_USER_ID,
    )
    def get_user_details(self, user_id: str) -> AirlineUser:
        return self._user(user_id)

    @tool("read", "Get the details of a reservation.", reservation_id=_RESERVATION_ID)
    def get_reservation_details(self, reservation_id: str) -> Reservation:
        return self._reservation(reservation_id)

    @tool("read", "List every airport (IATA code and city).")
    def list_all_airports(self) -> list[Airport]:
        return [{"iata": code, "city": city} for code, city in AIRPORTS]

    @tool(
        "read",
        "Search direct flights between two cities on a date.",
        origin=describe(STR, "Origin airport IATA code, such as 'JFK'."),
        destination=describe(STR, "Destination airport IATA code, such as 'LAX'."),
        date=describe(STR, "Date of the flight in YYYY-MM-DD, such as '2024-01-01'."),
    )
    def search_direct_flight(self, origin: str, destination: str, date: str) -> list[FlightSearchResult]:
        out = []
        for flight in self.db.tables["flights"].values():
            if flight["origin"] == origin and flight["destination"] == destination and date in flight["dates"]:
                day = flight["dates"][date]
                if day["status"] == "available":
                    out.append(_search_record(flight, day, None))
        return out

    @tool(
        "read",
        "Search one-stop flights (two segments) between two cities, departing on a date.",
        origin=describe(STR, "Origin airport IATA code, such as 'JFK'."),
        destination=describe(STR, "Destination airport IATA code, such as 'LAX'."),
        date=describe(STR, "Date of the first flight in YYYY-MM-DD, such as '2024-05-01'."),
    )
    def search_onestop_flight(self, origin: str, destination: str, date: str) -> list[list[FlightSearchResult]]:
        flights = self.db.tables["flights"]
        out = []
        for f1 in flights.values():
            if f1["origin"] != origin or date not in f1["dates"] or f1["dates"][date]["status"] != "available":
                continue
            # Reference behaviour: next day built without zero padding, month fixed to May.
            date2 = "2024-05-" + str(int(date[-2:]) + 1) if "+1" in f1["scheduled_arrival_time_est"] else date
            for f2 in flights.values():
                if (
                    f2["origin"] == f1["destination"]
                    and f2["destination"] == destination
                    and date2 in f2["dates"]
                    and f2["dates"][date2]["status"] == "available"
                    and f2["scheduled_departure_time_est"] >= f1["scheduled_arrival_time_est"]
                ):
                    out.append(
                        [_search_record(f1, f1["dates"][date], date), _search_record(f2, f2["dates"][date2], date2)]
                    )
        return out

    @tool(
        "read",
        "Get the status of a flight on a date.",
        flight_number=describe(STR, "The flight number, such as 'HAT001'."),
        date=describe(STR, "The date in YYYY-MM-DD, such as '2024-05-01'."),
    )
    def get_flight_status(self, flight_number: str, date: str) -> str:
        return self._flight_date(flight_number, date)["status"]

    # ---- write tools -----------------------------------------------------------------------

    @tool(
        "write",
        "Book a reservation. Only with explicit customer confirmation.",
        user_id=_USER_ID,
        origin=describe(STR, "Origin IATA code, such as 'SFO'."),
        destination=describe(STR, "Destination IATA code, such as 'JFK'."),
        flight_type=describe({"type": "string", "enum": ["round_trip", "one_way"]}, "The trip type."),
        cabin=_CABIN,
        flights=_FLIGHTS,
        passengers=_PASSENGERS,
        payment_methods=describe(
            {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"payment_id": STR, "amount": describe(INT, "Amount charged to this method.")},
                    "required": ["payment_id", "amount"],
                },
            },
            "The payment methods and the amount charged to each.",
        ),
        total_baggages=describe(INT, "Total number of checked bags."),
        nonfree_baggages=describe(INT, "Number of paid checked bags."),
        insurance=describe({"type": "string", "enum": ["yes", "no"]}, "Whether travel insurance is bought."),
    )
    def book_reservation(
        self,
        user_id: str,
        origin: str,
        destination: str,
        flight_type: str,
        cabin: str,
        flights: list[Any],
        passengers: list[Any],
        payment_methods: list[Any],
        total_baggages: int,
        nonfree_baggages: int,
        insurance: str,
    ) -> Reservation:
        flights = _convert_list(flights, "FlightInfo", _FLIGHT_INFO)
        passengers = _convert_list(passengers, "Passenger", _PASSENGER)
        payment_methods = _convert_list(payment_methods, "Payment", _PAYMENT)
        user = self._user(user_id)
        reservation_id = next((r for r in NEW_RESERVATION_IDS if r not in self.db.tables["reservations"]), None)
        if reservation_id is None:
            raise ToolError("Too many reservations")
        # build_record checked every field with the converter of its type (a failure raises)
        reservation = cast(
            Reservation,
            build_record(
                "Reservation",
                [
                    ("reservation_id", STRING),
                    ("user_id", STRING),
                    ("origin", STRING),
                    ("destination", STRING),
                    ("flight_type", enum(("round_trip", "one_way"))),
                    ("cabin", enum(CABINS)),
                    ("flights", lambda v: (v, None)),
                    ("passengers", _records_of("Passenger")),
                    ("payment_history", _records_of("Payment")),
                    ("created_at", STRING),
                    ("total_baggages", INTEGER),
                    ("nonfree_baggages", INTEGER),
                    ("insurance", enum(("yes", "no"))),
                    ("status", lambda v: (v, None)),
                ],
                {
                    "reservation_id": reservation_id,
                    "user_id": user_id,
                    "origin": origin,
                    "destination": destination,
                    "flight_type": flight_type,
                    "cabin": cabin,
                    "flights": [],
                    "passengers": [dict(p) for p in passengers] if isinstance(passengers, list) else passengers,
                    "payment_history": [dict(p) for p in payment_methods]
                    if isinstance(payment_methods, list)
                    else payment_methods,
                    "created_at": CURRENT_TIME,
                    "total_baggages": total_baggages,
                    "nonfree_baggages": nonfree_baggages,
                    "insurance": insurance,
                    "status": None,
                },
            ),
        )
        n = len(passengers)
        total = 0
        for f in flights:
            number, date = _attr(f, "flight_number"), _attr(f, "date")
            flight = self._flight(number)
            day = self._flight_date(number, date)
            if day["status"] != "available":
                raise ToolError(f"Flight {number} not available on date {date}")
            if day["available_seats"][reservation["cabin"]] < n:
                raise ToolError(f"Not enough seats on flight {number}")
            price = day["prices"][reservation["cabin"]]
            reservation["flights"].append(
                {
                    "flight_number": number,
                    "origin": flight["origin"],
                    "destination": flight["destination"],
                    "date": date,
                    "price": price,
                }
            )
            total += price * n
        if insurance == "yes":
            total += 30 * n
        total += 50 * nonfree_baggages
        for p in payment_methods:
            pid = _attr(p, "payment_id")
            if pid not in user["payment_methods"]:
                raise ToolError(f"Payment method {pid} not found")
            pm = user["payment_methods"][pid]
            if pm["source"] in ("gift_card", "certificate") and pm["amount"] < _attr(p, "amount"):
                raise ToolError(f"Not enough balance in payment method {pid}")
        paid = sum(_attr(p, "amount") for p in payment_methods)
        if paid != total:
            raise ToolError(f"Payment amount does not add up, total price is {total}, but paid {paid}")
        user = self._writable_user(user_id)
        for p in payment_methods:
            pid = p["payment_id"]
            held = user["payment_methods"][pid] if pid in user["payment_methods"] else None
            if held is not None and held["source"] == "gift_card":
                held["amount"] = held["amount"] - p["amount"]
            elif held is None or held["source"] == "certificate":
                del user["payment_methods"][pid]  # a certificate listed twice fails here: partial mutation
        for f in flights:
            self.db.own("flights", f["flight_number"])
            flight = self.db.tables["flights"][f["flight_number"]]
            flight["dates"][f["date"]]["available_seats"][reservation["cabin"]] -= n
        self.db.tables["reservations"][reservation_id] = reservation
        self.db.mark_inserted("reservations", reservation_id)
        user["reservations"].append(reservation_id)
        return reservation

    @tool(
        "write",
        "Cancel the whole reservation. Only with explicit customer confirmation.",
        reservation_id=_RESERVATION_ID,
    )
    def cancel_reservation(self, reservation_id: str) -> Reservation:
        self._reservation(reservation_id)
        reservation = self._writable_reservation(reservation_id)
        refunds: list[ReservationPayment] = [
            {"payment_id": p["payment_id"], "amount": -p["amount"]} for p in reservation["payment_history"]
        ]
        reservation["payment_history"].extend(refunds)
        reservation["status"] = "cancelled"
        return reservation

    @tool(
        "write",
        "Send a certificate (a voucher for future travel) to a user as compensation. Use with care.",
        user_id=_USER_ID,
        amount=describe({"type": "number"}, "The certificate amount."),
    )
    def send_certificate(self, user_id: str, amount: float) -> str:
        user = self._user(user_id)
        cert_id = next((c for c in NEW_CERTIFICATE_IDS if c not in user["payment_methods"]), None)
        if cert_id is None:
            raise ToolError("Too many certificates")
        # build_record checked every field with the converter of its type (a failure raises)
        cert = cast(
            PaymentMethod,
            build_record(
                "Certificate",
                [("source", STRING), ("id", STRING), ("amount", FLOAT)],
                {"source": "certificate", "id": cert_id, "amount": amount},
            ),
        )
        self._writable_user(user_id)["payment_methods"][cert_id] = cert
        return f"Certificate {cert_id} added to user {user_id} with amount {amount}."

    @tool(
        "write",
        "Update the baggage information of a reservation. Only with explicit customer confirmation.",
        reservation_id=_RESERVATION_ID,
        total_baggages=describe(INT, "The updated total number of bags."),
        nonfree_baggages=describe(INT, "The updated number of paid bags."),
        payment_id=describe(STR, "The payment method id stored in the user profile, such as 'credit_card_7815826'."),
    )
    def update_reservation_baggages(
        self, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
    ) -> Reservation:
        reservation = self._reservation(reservation_id)
        user = self._user(reservation["user_id"])
        price = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
        payment = self._payment_for_update(user, payment_id, price)
        reservation = self._writable_reservation(reservation_id)
        if payment is not None:
            reservation["payment_history"].append(payment)
        reservation["total_baggages"] = total_baggages
        reservation["nonfree_baggages"] = nonfree_baggages
        return reservation

    @tool(
        "write",
        "Update the flights (the whole new itinerary) and cabin of a reservation. Only with explicit customer confirmation.",
        reservation_id=_RESERVATION_ID,
        cabin=_CABIN,
        flights=_FLIGHTS,
        payment_id=describe(STR, "The payment method id stored in the user profile, such as 'credit_card_7815826'."),
    )
    def update_reservation_flights(
        self, reservation_id: str, cabin: str, flights: list[Any], payment_id: str
    ) -> Reservation:
        flights = _convert_list(flights, "FlightInfo", _FLIGHT_INFO)
        reservation = self._reservation(reservation_id)
        user = self._user(reservation["user_id"])
        n = len(reservation["passengers"])
        new_flights: list[ReservationFlight] = []
        total = 0
        for f in flights:
            number, date = _attr(f, "flight_number"), _attr(f, "date")
            kept = next(
                (
                    rf
                    for rf in reservation["flights"]
                    if rf["flight_number"] == number and rf["date"] == date and cabin == reservation["cabin"]
                ),
                None,
            )
            if kept is not None:
                total += kept["price"] * n
                new_flights.append(kept.copy())
                continue
            flight = self._flight(number)
            day = self._flight_date(number, date)
            if day["status"] != "available":
                raise ToolError(f"Flight {number} not available on date {date}")
            if day["available_seats"][cabin] < n:
                raise ToolError(f"Not enough seats on flight {number}")
            price = day["prices"][cabin]
            new_flights.append(
                {
                    "flight_number": number,
                    "origin": flight["origin"],
                    "destination": flight["destination"],
                    "date": date,
                    "price": price,
                }
            )
            total += price * n
        total -= sum(rf["price"] for rf in reservation["flights"]) * n
        payment = self._payment_for_update(user, payment_id, total)
        reservation = self._writable_reservation(reservation_id)
        if payment is not None:
            reservation["payment_history"].append(payment)
        reservation["flights"] = new_flights
        reservation["cabin"] = cabin
        return reservation

    @tool(
        "write",
        "Update the passenger information of a reservation (same number of passengers). Only with explicit customer confirmation.",
        reservation_id=_RESERVATION_ID,
        passengers=_PASSENGERS,
    )
    def update_reservation_passengers(self, reservation_id: str, passengers: list[Any]) -> Reservation:
        passengers = _convert_list(passengers, "Passenger", _PASSENGER)
        reservation = self._reservation(reservation_id)
        if len(passengers) != len(reservation["passengers"]):
            raise ToolError("Number of passengers does not match")
        reservation = self._writable_reservation(reservation_id)
        reservation["passengers"] = passengers
        return reservation


def _records_of(record: str) -> Callable[[Any], tuple[Any, str | None]]:
    def conv(v: Any) -> tuple[Any, str | None]:
        if isinstance(v, list) and all(isinstance(x, dict) for x in v):
            return v, None
        return v, f"Input should be a valid list of {record}"

    return conv
