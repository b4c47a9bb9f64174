"""The Daily Life APIs as a stateful, seeded simulation.

:class:`DailyLifeWorld` holds one user's world: a bank account and card and bill balances, a brokerage
portfolio at seeded prices, installed software, alarms, and logs of bookings, orders, messages, calls,
applications, deliveries, media played, notes and so on. Each of the 40 tools of the library is one method
on it (:data:`EFFECTS` says which collection a tool writes). Information tools (weather, news, web search)
change nothing and answer from the seed; every other tool changes the state and returns a confirmation.

The end state (:meth:`DailyLifeWorld.end_state`) is canonical: every log is a sorted list of records whose
values are normalised literals (or digests, for values that were another call's output), so two executions
compare equal when they did the same things, in any order the task graph allows. Money moves (bills, card
payments, trades) are sums, so their order does not matter either; installing and removing software does
depend on order, as it would.

Every random draw is a hash of the seed and the draw's key, so the world is the same for the same seed whatever
calls came before.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Any

from .artifacts import Artifact, as_text, normalise_literal

QUERY_TOOLS = frozenset({"get_weather", "get_news_for_topic", "search_by_engine"})
"""Tools that only read the world (their outputs are compared, not the state)."""

EFFECTS: dict[str, str] = {
    "book_flight": "bookings",
    "book_hotel": "bookings",
    "book_restaurant": "bookings",
    "book_car": "bookings",
    "online_shopping": "orders",
    "order_food_delivery": "orders",
    "sell_item_online": "listings",
    "send_email": "messages",
    "send_sms": "messages",
    "share_by_social_network": "posts",
    "apply_for_job": "applications",
    "apply_for_passport": "applications",
    "enroll_in_course": "enrollments",
    "see_doctor_online": "consultations",
    "consult_lawyer_online": "consultations",
    "buy_insurance": "policies",
    "online_banking": "banking",
    "daily_bill_payment": "payments",
    "pay_for_credit_card": "payments",
    "do_tax_return": "tax_returns",
    "stock_operation": "trades",
    "auto_housework_by_robot": "robot_tasks",
    "auto_driving_to_destination": "trips",
    "order_taxi": "trips",
    "deliver_package": "deliveries",
    "play_music_by_title": "media",
    "play_movie_by_title": "media",
    "take_note": "notes",
    "recording_audio": "recordings",
    "borrow_book_online": "loans",
    "make_video_call": "calls",
    "make_voice_call": "calls",
    "organize_meeting_online": "meetings",
    "attend_meeting_online": "meetings",
    "software_management": "software_log",
    "print_document": "print_jobs",
    "set_alarm": "alarms",
}
"""Which log each state-changing tool writes. Any other tool (not in QUERY_TOOLS) is recorded in the log
``other_calls``: a tool of another temporal library, or one the library does not have (v1 gold data calls
``play_music`` and ``trade_stock``), so its calls still count in the end state."""

_CONDITIONS = ("sunny", "partly cloudy", "cloudy", "light rain", "heavy rain", "thunderstorms", "snow", "windy")
_STOCK_DELTA = {"buy": 1, "cover": 1, "sell": -1, "short": -1}
_MONEY = re.compile(r"(\d+(?:[.,]\d+)?)")
_DATE_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%d/%m/%Y", "%m/%d/%Y", "%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%Y%m%d")


def _draw(seed: int, *key: str) -> int:
    """A deterministic 64-bit draw for (seed, key)."""
    text = "\x1f".join((str(seed), *key))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def normalise_value(value: Any, kind: str = "string") -> str:
    """A parameter value in canonical form: dates as ISO ``YYYY-MM-DD`` when they parse, else a literal."""
    if isinstance(value, Artifact):
        return value.digest
    if kind.lower() == "date" and isinstance(value, str):
        from datetime import datetime

        text = value.strip()
        for fmt in _DATE_FORMATS:
            try:
                return datetime.strptime(text, fmt).date().isoformat()
            except ValueError:
                continue
    return normalise_literal(value)


class DailyLifeWorld:
    """One seeded world of the Daily Life APIs (see the module docstring)."""

    def __init__(self, seed: int = 0, types: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self.seed = seed
        self.types = {tool: dict(params) for tool, params in (types or {}).items()}
        self.cash = 5000.0 + _draw(seed, "cash") % 20000
        self.portfolio: dict[str, int] = {}
        self.card_due: dict[str, float] = {}
        self.bills_paid: dict[str, float] = {}
        self.installed: set[str] = {normalise_literal(s) for s in ("web browser", "mail client")}
        self.logs: dict[str, list[dict[str, str]]] = {}

    # ------------------------------------------------------------------------------------------ reading

    def price(self, stock: str) -> float:
        """The seeded price of one share."""
        return round(10 + _draw(self.seed, "price", stock) % 49000 / 100, 2)

    def weather(self, location: str, date: str) -> dict[str, Any]:
        """The seeded forecast of a place on a day."""
        d = _draw(self.seed, "weather", location, date)
        high = d % 35 - 2
        return {"location": location, "date": date, "condition": _CONDITIONS[d % len(_CONDITIONS)],
                "high_c": high, "low_c": high - 3 - (d >> 8) % 8}

    def headlines(self, topic: str, n: int = 3) -> list[str]:
        """Seeded headlines about a topic."""
        return [f"{topic.title()}: story {_draw(self.seed, 'news', topic, str(i)) % 9000 + 1000}" for i in range(n)]

    def search(self, query: str, engine: str, n: int = 3) -> list[dict[str, str]]:
        """Seeded search results."""
        out = []
        for i in range(n):
            d = _draw(self.seed, "search", engine, query, str(i))
            out.append({"title": f"{query} - result {i + 1}", "url": f"https://site{d % 997}.example/{d % 100000}"})
        return out

    # ------------------------------------------------------------------------------------------ writing

    def _record(self, tool: str, args: Mapping[str, Any]) -> dict[str, str]:
        kinds = self.types.get(tool, {})
        rec = {"tool": tool}
        for name, value in sorted(args.items()):
            rec[name] = normalise_value(value, kinds.get(name, "string"))
        self.logs.setdefault(EFFECTS.get(tool, "other_calls"), []).append(rec)
        return rec

    def apply(self, tool: str, args: Mapping[str, Any]) -> tuple[Any, bool]:
        """Run ``tool`` with named ``args`` (values: JSON values or artifacts); returns (result, changed_state)."""
        text = {k: (v.content if isinstance(v, Artifact) else as_text(v)) for k, v in args.items()}
        if tool == "get_weather":
            return self.weather(text.get("location", ""), normalise_value(args.get("date", ""), "date")), False
        if tool == "get_news_for_topic":
            return {"topic": text.get("topic", ""), "headlines": self.headlines(text.get("topic", ""))}, False
        if tool == "search_by_engine":
            return {"engine": text.get("engine", ""), "results": self.search(text.get("query", ""),
                                                                             text.get("engine", ""))}, False
        rec = self._record(tool, args)
        handler = _HANDLERS.get(tool)
        extra = handler(self, rec, text) if handler is not None else {}
        ref = hashlib.sha256(repr(sorted(rec.items())).encode()).hexdigest()[:10].upper()
        return {"status": "done", "tool": tool,
                "confirmation": f"{EFFECTS.get(tool, 'call')[:3].upper()}-{ref}", **extra}, True

    def end_state(self) -> dict[str, Any]:
        """The canonical end state (see the module docstring)."""
        logs = {k: sorted(v, key=lambda r: sorted(r.items())) for k, v in sorted(self.logs.items()) if v}
        return {
            "cash": round(self.cash, 2),
            "portfolio": {k: v for k, v in sorted(self.portfolio.items()) if v},
            "card_payments": {k: round(v, 2) for k, v in sorted(self.card_due.items())},
            "bills_paid": {k: round(v, 2) for k, v in sorted(self.bills_paid.items())},
            "installed": sorted(self.installed),
            "logs": logs,
        }


def _pay_card(world: DailyLifeWorld, rec: dict[str, str], text: dict[str, str]) -> dict[str, Any]:
    card = rec.get("credit_card", "")
    due = round(50 + _draw(world.seed, "card", card) % 150000 / 100, 2)
    world.card_due[card] = world.card_due.get(card, 0.0) + due
    world.cash -= due
    return {"paid": due, "balance": round(world.cash, 2)}


def _pay_bill(world: DailyLifeWorld, rec: dict[str, str], text: dict[str, str]) -> dict[str, Any]:
    bill = rec.get("bill", "")
    amount = round(20 + _draw(world.seed, "bill", bill) % 30000 / 100, 2)
    world.bills_paid[bill] = world.bills_paid.get(bill, 0.0) + amount
    world.cash -= amount
    return {"paid": amount, "balance": round(world.cash, 2)}


def _trade(world: DailyLifeWorld, rec: dict[str, str], text: dict[str, str]) -> dict[str, Any]:
    stock, operation = rec.get("stock", ""), rec.get("operation", "")
    delta = next((d for word, d in _STOCK_DELTA.items() if word in operation), 0)
    price = world.price(stock)
    world.portfolio[stock] = world.portfolio.get(stock, 0) + delta
    world.cash -= delta * price
    return {"price": price, "shares": world.portfolio[stock]}


def _software(world: DailyLifeWorld, rec: dict[str, str], text: dict[str, str]) -> dict[str, Any]:
    software, instruction = rec.get("software", ""), rec.get("instruction", "")
    if "uninstall" in instruction or "remove" in instruction:
        world.installed.discard(software)
    elif "install" in instruction or "update" in instruction or "upgrade" in instruction:
        world.installed.add(software)
    return {"installed": software in world.installed}


def _banking(world: DailyLifeWorld, rec: dict[str, str], text: dict[str, str]) -> dict[str, Any]:
    instruction = rec.get("instruction", "")
    found = _MONEY.search(instruction.replace(",", ""))
    amount = float(found.group(1)) if found else 0.0
    if "deposit" in instruction:
        world.cash += amount
    elif "withdraw" in instruction or "transfer" in instruction or "pay" in instruction:
        world.cash -= amount
    return {"amount": amount, "balance": round(world.cash, 2)}


_HANDLERS: dict[str, Callable[[DailyLifeWorld, dict[str, str], dict[str, str]], dict[str, Any]]] = {
    "pay_for_credit_card": _pay_card,
    "daily_bill_payment": _pay_bill,
    "stock_operation": _trade,
    "software_management": _software,
    "online_banking": _banking,
}


def state_diff(gold: Mapping[str, Any], pred: Mapping[str, Any], limit: int = 6) -> list[str]:
    """Readable differences between two end states (at most ``limit``)."""
    out: list[str] = []
    for key in ("cash", "portfolio", "card_payments", "bills_paid", "installed"):
        if gold.get(key) != pred.get(key):
            out.append(f"{key}: expected {gold.get(key)!r}, got {pred.get(key)!r}")
    glogs, plogs = gold.get("logs", {}), pred.get("logs", {})
    for name in sorted(set(glogs) | set(plogs)):
        g, p = glogs.get(name, []), plogs.get(name, [])
        missing = [r for r in g if r not in p]
        extra = [r for r in p if r not in g]
        for r in missing:
            out.append(f"{name}: missing {r}")
        for r in extra:
            out.append(f"{name}: unexpected {r}")
    return out[:limit]


__all__ = ["DailyLifeWorld", "EFFECTS", "QUERY_TOOLS", "normalise_value", "state_diff"]
