"""The customer service family: a hotel support agent following a written policy.

Why its own module: its runs are many short turns (verification, confirmation, one request after
another) with small JSON tool results, the opposite of the long-output families.
"""

from __future__ import annotations

import random
from typing import Any

from .family import Family
from .fragments import words
from .run import Run
from .tools import customer_service_tools

CITIES = ("Lisbon", "Chicago", "Osaka", "Toronto", "Denver", "Edinburgh", "Austin", "Seville", "Melbourne", "Montreal")
HOTEL_SUFFIXES = ("Downtown", "Riverside", "Airport", "Old Town", "Harbor", "Central Station")
ROOM_TYPES = ("standard_queen", "standard_twin", "deluxe_king", "junior_suite", "family_room")
FIRST_NAMES = words(
    "Ana Ben Chloe Dev Elena Farid Grace Hiro Ines Jonas Kemi Liam Maya Noor Owen Priya Quinn Rosa Sami Tara"
)
LAST_NAMES = words(
    "Alvarez Brooks Chen Dubois Eriksen Fischer Garcia Haddad Ito Jensen Kowalski Lopez Moreau Nakamura "
    "Okafor Patel Rossi Silva"
)
POLICY_SECTIONS = (
    "## Verifying the guest\n\nBefore looking up or changing any booking, confirm the guest's identity with the "
    "email address on file and either the booking number or the last four digits of the card used. Never reveal "
    "booking details to someone who cannot be verified. After three failed attempts, offer a transfer to a human "
    "colleague and do not continue.",
    "## Making changes\n\nBefore any action that changes a booking (creating it, changing dates or room type, "
    "cancelling, adding extras), list the exact details of the action and ask the guest to confirm with an explicit "
    "yes. Make one tool call at a time, and do not reply to the guest in the same message as a tool call.",
    "## Rates and refunds\n\nFlexible rates can be cancelled free of charge until 48 hours before check-in; after "
    "that the first night is charged. Saver rates are prepaid and non-refundable, but the dates can be changed once "
    "for a fee of $35 if the new stay is at the same hotel. Refunds go back to the original payment method and take "
    "5 to 10 business days. Gift cards are refunded as gift card balance.",
    "## Loyalty tiers\n\nMembers are Blue, Silver, Gold or Platinum. Gold and Platinum members may change dates once "
    "per booking without a fee, even on Saver rates. Platinum members get a late checkout until 2 pm when the hotel "
    "confirms availability. Tier benefits apply only to the member's own room, not to rooms booked for others.",
    "## Compensation\n\nOffer a goodwill voucher only when the hotel was at fault (room not ready at check-in, "
    "maintenance problem, billing error), and only after checking the booking. Vouchers are $50 per affected night "
    "for Blue and Silver members and $100 per affected night for Gold and Platinum members, up to $400 per booking. "
    "Never offer cash, and never offer compensation the guest did not ask for.",
    "## Payment methods\n\nA booking can be paid with up to one card and up to two gift cards. The card on file must "
    "be used for any balance. Do not accept card numbers in the chat: ask the guest to add new cards in their "
    "account, then refresh the profile.",
    "## Extras\n\nBreakfast costs $18 per adult per night and is free for children under 6. Parking is $25 per night "
    "where available. Extras can be added or removed until check-in and are charged at the hotel.",
    "## Groups and long stays\n\nBookings of more than 5 rooms or longer than 21 nights are handled by the groups "
    "desk. Do not create them yourself; transfer the guest with a summary of what they need.",
    "## Accessibility\n\nAccessible rooms exist in every hotel but are limited. When a guest mentions accessibility "
    "needs, search only rooms flagged `accessible: true`, and never move a guest out of an accessible room without "
    "asking.",
    "## Tone\n\nBe concise and friendly. Use the guest's name once verified. Do not speculate about things you cannot "
    "check with your tools, do not invent policies, and do not promise upgrades.",
)
# Each guest request is one action; its wording opens the run or comes up mid-conversation.
CS_REQUESTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "cancel_booking": (
        (
            "Hi, I need to cancel my stay in {city}. The booking number is {bid}.",
            "Hello, please cancel reservation {bid}. My plans changed.",
        ),
        ("Actually, could you cancel {bid} as well?", "One more: please cancel {bid}, I won't need it."),
    ),
    "change_dates": (
        (
            "Hello! I'd like to change the dates of my reservation {bid}. Something came up at work.",
            "Can I move booking {bid} to start on {date} instead?",
        ),
        ("Can you also move {bid} so that it starts on {date}?",),
    ),
    "add_extras": (
        ("hey, can you add breakfast to my booking {bid}? thx",),
        ("Could you add breakfast to {bid} too?", "Is breakfast included in {bid}? If not, please add it."),
    ),
    "issue_voucher": (
        (
            "My room in {city} was not ready when I arrived yesterday and I waited three hours. I'd like this to be "
            "acknowledged. Booking {bid}.",
        ),
        ("Also, during my stay on {bid} the heating was broken for two nights. Can something be done about that?",),
    ),
    "create_booking": (
        ("Hi there, I want to book a room in {city} for {nights} nights starting {date}, for two adults.",),
        ("Thanks! While I have you, could you find me a room in {city} from {date} for {nights} nights?",),
    ),
}
CS_LABELS = {
    "cancel_booking": "cancel the booking",
    "change_dates": "change the dates",
    "add_extras": "add breakfast",
    "issue_voucher": "issue a goodwill voucher",
    "create_booking": "create a new booking",
}
CS_DONE = {
    "cancel_booking": "cancelled the booking",
    "change_dates": "changed the dates",
    "add_extras": "added breakfast",
    "issue_voucher": "issued a goodwill voucher",
    "create_booking": "created the booking",
}
CS_REPLIES = {
    "verify": ("Sure, it's {email}.", "My email is {email}, and the card ends in {last4}.", "{email}"),
    "confirm": ("Yes, please go ahead.", "yes", "Yes, that's correct.", "Okay, do it."),
    "close": ("No, that's all. Thank you!", "That's everything, thanks for your help.", "nope, all good"),
}
CS_VERIFY = (
    "I can help with that. To verify your identity, could you give me the email address on the booking?",
    "Happy to help! First, please confirm the email address associated with your account.",
)
CS_REASONING = {
    "guest": ("The guest gave an email; I need their profile before touching any booking.",),
    "booking": (
        "The guest is verified; next I need the booking details to check the rate plan.",
        "I should look at the booking before proposing anything.",
    ),
    "search": ("Before searching availability I need the city, the dates and the number of guests; I have them.",),
    "confirm": (
        "I must list the action details and get an explicit yes before calling the tool.",
        "The rate plan and the tier decide the fee; I'll state it before asking for confirmation.",
    ),
    "act": ("The guest confirmed with a clear yes, so I can proceed.",),
}


class CustomerService(Family):
    """A hotel support agent following a written policy, with many short user turns.

    Each guest request runs as verify (once) → profile (once) → look up the booking or search
    rooms → list the details and ask for a yes → act → report and hear the next request.
    """

    name = "customer_service"
    chars_per_token = (3.9, 3.06)

    def __init__(self, rng: random.Random, lang: str) -> None:
        super().__init__(rng, lang)
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        self.first = first
        self.guest_id = f"{first}_{last}_{rng.randint(1000, 9999)}".lower()
        self.email = f"{first}.{last}{rng.randint(1, 99)}@example.com".lower()
        self.name_ = f"{first} {last}"
        self.tier = rng.choice(("Blue", "Silver", "Gold", "Platinum"))
        self.card = f"{rng.randint(0, 9999):04d}"
        self.bookings = [self._booking_id() for _ in range(rng.randint(2, 5))]
        self.action = rng.choice(tuple(CS_REQUESTS))
        self.current = self.bookings[0]
        self.record: dict[str, Any] = {}
        self.records: dict[str, dict] = {}  # so a booking looks the same every time it is fetched
        self.wanted = {"city": rng.choice(CITIES), "check_in": self._date(), "nights": rng.randint(2, 6)}
        self.phase = "verify"
        sections = [s for s in POLICY_SECTIONS if rng.random() < 0.85]
        today = f"2025-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}"
        self.intro = (
            f"# Larkspur Hotels: guest support policy\n\nThe current time is {today} 10:{rng.randint(10, 59)} "
            "local time. You are the virtual support agent for Larkspur Hotels. You help guests find rooms, "
            "make and change bookings, cancel stays, and resolve billing questions, following the rules "
            "below.\n\n" + "\n\n".join(sections)
        )

    def _booking_id(self) -> str:
        return "".join(self.rng.choices("ABCDEFGHJKLMNPQRSTUVWXYZ23456789", k=6))

    tool_schemas = staticmethod(customer_service_tools)

    def opening(self, run: Run) -> None:
        if self.rng.random() < 0.4:
            run.gpt("Hi! Welcome to Larkspur Hotels support. How can I help you today?")

    def _request(self, opening: bool) -> str:
        rng = self.rng
        self.wanted = {"city": rng.choice(CITIES), "check_in": self._date(), "nights": rng.randint(2, 6)}
        template = rng.choice(CS_REQUESTS[self.action][0 if opening else 1])
        w = self.wanted
        return template.format(city=w["city"], bid=self.current, nights=w["nights"], date=w["check_in"])

    def task(self) -> str:
        return self._request(opening=True)

    def followup(self) -> str:
        """The guest's next request: pick a new action (and booking) first, then phrase it."""
        self.action = self.rng.choice(tuple(CS_REQUESTS))
        self.current = self.rng.choice(self.bookings)
        return self._request(opening=False)

    def meta(self) -> dict[str, Any]:
        return {"domain": "hotel", "tier": self.tier}

    def _date(self, after: str | None = None, nights: int = 0) -> str:
        if after:
            year, month, day = after.split("-")
            day_number = min(28, int(day) + nights)
            return f"{year}-{month}-{day_number:02d}"
        return f"2025-{self.rng.randint(1, 12):02d}-{self.rng.randint(1, 21):02d}"

    def _booking(self, booking_id: str) -> dict:
        if booking_id not in self.records:
            self.records[booking_id] = self._new_booking(booking_id)
        return dict(self.records[booking_id])

    def _new_booking(self, booking_id: str) -> dict:
        rng = self.rng
        nights = rng.randint(1, 7)
        rate = rng.choice((119, 145, 189, 230, 315))
        check_in = self._date()
        return {
            "booking_id": booking_id,
            "guest_id": self.guest_id,
            "hotel": f"Larkspur {rng.choice(CITIES)} {rng.choice(HOTEL_SUFFIXES)}",
            "room_type": rng.choice(ROOM_TYPES),
            "check_in": check_in,
            "check_out": self._date(check_in, nights),
            "nights": nights,
            "rate_plan": rng.choice(("flexible", "saver")),
            "guests": [{"name": self.name_, "adult": True}],
            "nightly_prices": [{"night": i + 1, "price": rate + rng.choice((0, 0, 10, 25))} for i in range(nights)],
            "extras": rng.choice(([], ["parking"], ["breakfast"])),
            "status": "confirmed",
            "payments": [{"method": "card", "last4": self.card, "amount": rate * nights}],
        }

    def _offers(self, city: str, budget: int) -> list[dict]:
        rng, offers = self.rng, []
        for _ in range(max(1, budget // 300)):
            offers.append(
                {
                    "hotel_id": f"LH-{rng.randint(100, 999)}",
                    "hotel": f"Larkspur {city} {rng.choice(HOTEL_SUFFIXES)}",
                    "room_type": rng.choice(ROOM_TYPES),
                    "accessible": rng.random() < 0.2,
                    "rates": {"flexible": rng.randint(120, 400), "saver": rng.randint(90, 300)},
                    "rooms_left": rng.randint(1, 9),
                    "distance_to_center_km": round(rng.uniform(0.2, 18), 1),
                }
            )
        return offers

    def _terms(self) -> str:
        """What the confirmation message says about money, from the booking, the rate and the tier."""
        r, action = self.record, self.action
        if action == "cancel_booking":
            if r.get("rate_plan") == "flexible":
                return f"Refund: ${r['payments'][0]['amount']} to the card ending {self.card} (5 to 10 business days)"
            return "Refund: none, this is a non-refundable Saver rate"
        if action == "change_dates":
            free = self.tier in ("Gold", "Platinum") or r.get("rate_plan") == "flexible"
            return f"New dates: {r['new_check_in']} to {r['new_check_out']}; " + (
                "no change fee applies" if free else "change fee: $35"
            )
        if action == "add_extras":
            return "Breakfast: $18 per adult per night, charged at the hotel"
        if action == "issue_voucher":
            return f"Voucher: ${r['voucher']} ({self.tier} member, {r['nights_affected']} night(s) affected)"
        return f"Total: ${r['total']} on the card ending {self.card}, {r['rate_plan']} rate"

    def step(self, run: Run, budget: int, progress: float) -> None:
        rng, phase = self.rng, self.phase
        thought = rng.choice(CS_REASONING.get(phase, CS_REASONING["act"]))
        if phase == "verify":
            run.gpt(rng.choice(CS_VERIFY))
            run.add("human", rng.choice(CS_REPLIES["verify"]).format(email=self.email, last4=self.card))
            self.phase = "guest"
        elif phase == "guest":
            run.act("", [("find_guest", {"email": self.email}, {"guest_id": self.guest_id})], thought)
            profile = {
                "guest_id": self.guest_id,
                "name": self.name_,
                "email": self.email,
                "tier": self.tier,
                "payment_methods": [
                    {"id": f"card_{self.card}", "type": "card", "last4": self.card},
                    {"id": "gift_card_1", "type": "gift_card", "balance": rng.randint(0, 300)},
                ],
                "bookings": self.bookings,
                "member_since": self._date(),
            }
            run.act("", [("get_guest", {"guest_id": self.guest_id}, profile)])
            self.phase = "lookup"
        elif phase == "lookup" and self.action == "create_booking":
            city, check_in, nights = self.wanted["city"], self.wanted["check_in"], self.wanted["nights"]
            args = {"city": city, "check_in": check_in, "check_out": self._date(check_in, nights), "guests": 2}
            offers = self._offers(city, budget)
            run.act("", [("search_rooms", args, offers)], CS_REASONING["search"][0])
            pick = rng.choice(offers)
            rate_plan = rng.choice(("flexible", "saver"))
            self.record = {**args, **pick, "rate_plan": rate_plan, "total": pick["rates"][rate_plan] * nights}
            self.phase = "confirm"
        elif phase == "lookup":
            self.record = self._booking(self.current)
            run.act("", [("get_booking", {"booking_id": self.current}, self.record)], thought)
            new_in = self._date()
            self.record.update(
                new_check_in=new_in,
                new_check_out=self._date(new_in, self.record["nights"]),
                voucher=rng.choice((50, 100, 200)),
                nights_affected=rng.randint(1, 2),
            )
            self.phase = "confirm"
        elif phase == "confirm":
            r = self.record
            lines = [
                f"- Booking: {self.current}" if self.action != "create_booking" else "- New booking",
                f"- Hotel: {r['hotel']}, {r['room_type'].replace('_', ' ')}",
                f"- Action: {CS_LABELS[self.action]}",
                f"- {self._terms()}",
            ]
            run.gpt(
                "Here is what I'm about to do:\n\n" + "\n".join(lines) + "\n\nShall I proceed? Please answer "
                "yes to confirm.",
                thought,
            )
            run.add("human", rng.choice(CS_REPLIES["confirm"]))
            self.phase = "act"
        else:
            self._act(run, thought)

    def _act(self, run: Run, thought: str) -> None:
        rng, r, tool = self.rng, self.record, self.action
        args: dict[str, Any]
        if tool == "cancel_booking":
            args = {
                "booking_id": self.current,
                "reason": rng.choice(("change of plans", "travel restrictions", "found another option")),
            }
        elif tool == "change_dates":
            args = {"booking_id": self.current, "check_in": r["new_check_in"], "check_out": r["new_check_out"]}
        elif tool == "add_extras":
            args = {"booking_id": self.current, "extras": ["breakfast"]}
        elif tool == "issue_voucher":
            args = {"guest_id": self.guest_id, "amount": r["voucher"], "reason": "hotel at fault: room not ready"}
        else:
            args = {
                "guest_id": self.guest_id,
                "hotel_id": r["hotel_id"],
                "room_type": r["room_type"],
                "check_in": r["check_in"],
                "check_out": r["check_out"],
                "rate_plan": r["rate_plan"],
                "payment": f"card_{self.card}",
            }
        if rng.random() < 0.1:
            result: dict[str, Any] = {
                "status": "error",
                "message": "Booking is locked by the hotel; ask the front desk.",
            }
            reply = (
                "I'm sorry, the hotel has locked this booking, so I can't change it from here. I can transfer you "
                "to a colleague at the front desk, or help with something else."
            )
        else:
            booking_id = self._booking_id() if tool == "create_booking" else self.current
            result = {"status": "ok", "booking_id": booking_id, "action": tool}
            reply = rng.choice(
                (
                    "Done: I {label} for {bid}. {terms}. Is there anything else I can help with?",
                    "All set ({bid}): I {label}. {terms}. Anything else?",
                )
            )
            reply = reply.format(label=CS_DONE[tool], bid=booking_id, terms=self._terms())
            if tool == "create_booking":
                self.bookings.append(booking_id)
            elif tool == "cancel_booking" and len(self.bookings) > 1:
                self.bookings.remove(booking_id)
        run.act("", [(tool, args, result)], thought)
        run.gpt(reply)
        run.add("human", self.followup())
        self.phase = "lookup"

    def final(self, run: Run) -> None:
        if run.turns[-1]["from"] == "human":
            run.gpt(
                "I've noted that request and passed it to the front desk team; they will e-mail you within 24 "
                "hours. Is there anything else I can help you with today?"
            )
        else:
            run.gpt(f"That's done, {self.first}. Is there anything else I can help you with?")
        run.add("human", self.rng.choice(CS_REPLIES["close"]))
        run.gpt(f"You're welcome, {self.first}! Have a lovely stay.")
