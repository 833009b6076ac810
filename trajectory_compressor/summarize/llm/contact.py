"""Whether the endpoint has ever answered this run: a dead endpoint is a configuration error.

A row whose summary fails on a working endpoint takes `--on-summary-failure`; an endpoint that
has never sent back any HTTP response (connection refused, DNS or TLS failure, every request
timing out) is a wrong `--base-url` or a server that is down, and falling back row after row
would only hide it. So, until the first response arrives:

* the first request to fail without a response becomes the *probe*: it alone goes on retrying
  (with its backoff), while every other request waits instead of sending, so a dead endpoint
  costs the first wave of requests plus one request's retries, not hundreds;
* when the probe ends without a response (its retries run out, its row's deadline cuts it,
  or the failure is not one to retry), the endpoint is declared unreachable: every waiting and
  later request fails at once with `types.EndpointUnreachableError`, and the run stops with exit 2;
* any response at all, even an error status, settles it the other way for the rest of the run:
  failures are then the rows' own, as before.
"""

from __future__ import annotations

import asyncio


class EndpointContact:
    """One endpoint's first contact, shared by every request of a client. `endpoint` is shown
    in messages, so it must come without credentials (`redact.display_url`)."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.answered = False
        self.unreachable: str | None = None  # the message, once the probe ended without an answer
        self._silence: str | None = None  # the last failure that got no response
        self._probe: object | None = None
        self._settled: asyncio.Event | None = None

    @property
    def silent(self) -> bool:
        """No response yet, and at least one request failed for lack of one."""
        return not self.answered and self._silence is not None

    def silence(self) -> str | None:
        """Why the run must stop, while the endpoint is silent (for a row cut by its deadline)."""
        return self.message() if self.silent else None

    def message(self) -> str:
        return (
            f"the endpoint {self.endpoint} never answered since the run started (last: {self._silence}); "
            "check --base-url and that the server is up, then run the same command again"
        )

    def heard(self) -> None:
        """A response arrived: the endpoint is there."""
        if not self.answered:
            self.answered = True
            self._wake()

    def no_response(self, caller: object, failure: str) -> None:
        """`caller`'s attempt got no response; the first such caller becomes the probe."""
        if self.answered:
            return
        self._silence = failure
        if self._probe is None:
            self._probe = caller

    async def may_send(self, caller: object) -> bool:
        """Whether `caller` may send now; while another request probes a silent endpoint, wait
        for its verdict. False: the endpoint is unreachable."""
        while self.silent and self.unreachable is None and self._probe is not caller:
            if self._settled is None:
                self._settled = asyncio.Event()
            await self._settled.wait()
        return self.unreachable is None

    def done(self, caller: object) -> None:
        """`caller` stopped asking (answered, failed or cancelled): a probe that stops unanswered
        settles it, the endpoint is unreachable."""
        if self._probe is caller and not self.answered and self.unreachable is None:
            self.unreachable = self.message()
            self._wake()

    def _wake(self) -> None:
        if self._settled is not None:
            self._settled.set()
