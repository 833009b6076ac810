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
* unless the server is up (its model list answered a GET when the probe ended: `server_up`):
  then the next call probes (`PROBES` in all), while the first waits for its verdict when other
  calls are asking, or fails as its row's own when none is (one request at a time). A server that
  drops one row's request every time (a prompt it cannot serve) stopped the whole run, with
  nothing written, as a dead endpoint; now that row fails alone, as it would have after any
  answer. A server whose model list answers but that answers no request is still unreachable,
  after the second probe (one request at a time, the first probe's row has then taken its
  failure policy);
* any response at all, even an error status, settles it the other way for the rest of the run:
  failures are then the rows' own, as before.
"""

from __future__ import annotations

import asyncio

PROBES = 2  # requests that must each end unanswered, while the server is up, before it is unreachable


class EndpointContact:
    """One endpoint's first contact, shared by every request of a client. `endpoint` is shown
    in messages, so it must come without credentials (`redact.display_url`)."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.answered = False
        self.unreachable: str | None = None  # the message, once the probe ended without an answer
        self._silence: str | None = None  # the last failure that got no response
        self._probe: object | None = None
        self._failed_probes: list[object] = []  # probes that ended unanswered while the server was up
        self._askers: set[object] = set()  # calls asking now (`asking` to `done`)
        self._settled: asyncio.Event | None = None
        self.server_up = False  # the server answered a GET of its model list (`client.ChatClient`)

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

    def asking(self, caller: object) -> None:
        """`caller` starts asking (one call, all its attempts), until `done`."""
        self._askers.add(caller)

    def probing(self, caller: object) -> bool:
        """Whether `caller` is the request probing a silent endpoint, not yet settled."""
        return self._probe is caller and not self.answered and self.unreachable is None

    async def may_send(self, caller: object) -> bool:
        """Whether `caller` may send now; while another request probes a silent endpoint, wait
        for its verdict (or to probe next). False: the endpoint is unreachable."""
        while self.silent and self.unreachable is None and self._probe is not caller:
            if self._probe is None:  # the last probe ended while the server was up: this one goes next
                self._probe = caller
                break
            await self._wait()
        return self.unreachable is None

    async def verdict(self, caller: object) -> None:
        """Wait, as a probe that ended unanswered while the server was up, until another call
        settles whether the endpoint answers; at once when no other call is asking (one request
        at a time: the row's failure is then its own, and the next call probes)."""
        while caller in self._failed_probes and not self.answered and self.unreachable is None and self._askers:
            await self._wait()

    def done(self, caller: object) -> None:
        """`caller` stopped asking (answered, failed or cancelled): a probe that stops unanswered
        settles it, the endpoint is unreachable, unless the server is up and another call is
        asking, to probe next (see the module docstring); so does the last call leaving while
        a handed-over probe waits."""
        self._askers.discard(caller)
        if self.answered or self.unreachable is not None:
            return
        if self._probe is caller:
            self._probe = None
            if self.server_up and len(self._failed_probes) + 1 < PROBES:
                self._failed_probes.append(caller)
            else:
                self.unreachable = self.message()
            self._wake()
        elif self._failed_probes and not self._askers:
            self._wake()  # no call is left to probe now: the waiting probes' rows fail as their own

    async def _wait(self) -> None:
        if self._settled is None:
            self._settled = asyncio.Event()
        await self._settled.wait()

    def _wake(self) -> None:
        """Wake every waiter; each looks again, and waits on a new event if it must."""
        settled, self._settled = self._settled, None
        if settled is not None:
            settled.set()
