"""Oldest row first (`summarize.oldest_first`): a row asking again is served before later rows.

Every wait here is on an event the code under test passes at a known point; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from trajectory_compressor.run.window import finish_in_order
from trajectory_compressor.summarize.oldest_first import OrderedSlots, OrderedWorker, place, take_place


def test_the_window_serves_a_row_asking_again_before_the_rows_behind_it() -> None:
    """Row 0 asks twice; by its second request rows 2 and 3 already wait for the one slot.

    First come, first served would give 0, 1, 2, 3, 0 (row 0 holding the head of the window
    while every later row goes first); oldest first gives 0, 1, 0, 2, 3.
    """
    served: list[str] = []

    async def scenario() -> list[str]:
        slots = OrderedSlots(1)
        row_one_holds, row_one_may_go, row_zero_queued = asyncio.Event(), asyncio.Event(), asyncio.Event()

        async def finish(row: Any) -> Any:
            async with slots:
                served.append(f"{row}")
                if row == 1:
                    row_one_holds.set()
                    await row_one_may_go.wait()
            if row == 0:
                await row_one_holds.wait()  # rows 2 and 3 are queued behind row 1 by now
                row_zero_queued.set()  # no await between this and the queueing below
                async with slots:
                    served.append("0 again")
            return row

        async def release_row_one() -> None:
            await row_zero_queued.wait()
            row_one_may_go.set()

        chunks = iter([[0, 1, 2, 3]])
        committed: list[Any] = []
        releasing = asyncio.ensure_future(release_row_one())
        await finish_in_order(
            lambda: next(chunks, None),  # type: ignore[arg-type,return-value]
            finish,
            committed.append,
            lambda pending: None,
            limit=16,
            chunk_rows=4,
        )
        await releasing
        assert committed == [0, 1, 2, 3]
        return served

    assert asyncio.run(scenario()) == ["0", "1", "0 again", "2", "3"]


def test_slots_admit_the_lowest_place_first_and_equals_in_arrival_order() -> None:
    async def scenario() -> list[str]:
        slots = OrderedSlots(1)
        order: list[str] = []
        holder_in, holder_may_go = asyncio.Event(), asyncio.Event()
        queued: dict[str, asyncio.Event] = {name: asyncio.Event() for name in "abcd"}

        async def holder() -> None:
            take_place()
            async with slots:
                holder_in.set()
                await holder_may_go.wait()

        async def waiter(name: str, its_place: int) -> None:
            await holder_in.wait()
            from trajectory_compressor.summarize import oldest_first

            oldest_first._PLACE.set(its_place)  # a chosen place, to queue out of place order
            queued[name].set()
            async with slots:
                order.append(name)

        tasks = [asyncio.ensure_future(holder())]
        for name, its_place in (("a", 30), ("b", 10), ("c", 20), ("d", 10)):
            tasks.append(asyncio.ensure_future(waiter(name, its_place)))
            await queued[name].wait()
        holder_may_go.set()
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(scenario()) == ["b", "d", "c", "a"]


def test_a_waiter_cancelled_after_it_was_handed_the_slot_passes_it_on() -> None:
    async def scenario() -> bool:
        slots = OrderedSlots(1)
        await slots.__aenter__()  # the test holds the only slot
        first = asyncio.ensure_future(slots.__aenter__())
        second = asyncio.ensure_future(slots.__aenter__())
        await asyncio.sleep(0)  # both queued (each runs to its first await)
        await slots.__aexit__()  # handed to `first`...
        first.cancel()  # ...which is cancelled before it runs again
        with pytest.raises(asyncio.CancelledError):
            await first
        await asyncio.wait_for(second, timeout=5)  # the slot went on to `second`
        await slots.__aexit__()
        third = asyncio.ensure_future(slots.__aenter__())
        await asyncio.wait_for(third, timeout=5)  # and back to the pool when nobody waits
        return True

    assert asyncio.run(scenario())


def test_a_cancelled_waiter_never_takes_a_slot() -> None:
    async def scenario() -> None:
        slots = OrderedSlots(1)
        await slots.__aenter__()
        gone = asyncio.ensure_future(slots.__aenter__())
        stays = asyncio.ensure_future(slots.__aenter__())
        await asyncio.sleep(0)
        gone.cancel()
        with pytest.raises(asyncio.CancelledError):
            await gone
        await slots.__aexit__()
        await asyncio.wait_for(stays, timeout=5)
        assert not stays.cancelled()

    asyncio.run(scenario())


def test_slots_refuse_zero() -> None:
    with pytest.raises(ValueError):
        OrderedSlots(0)


def test_the_worker_runs_the_lowest_place_first_and_hands_back_results_and_errors() -> None:
    worker = OrderedWorker("test-ordered")
    busy, may_go = threading.Event(), threading.Event()
    ran: list[str] = []

    def block() -> str:
        busy.set()
        may_go.wait(timeout=30)
        return "blocked"

    def record(name: str) -> str:
        if name == "bad":
            raise KeyError(name)
        ran.append(name)
        return name.upper()

    async def scenario() -> list[Any]:
        take_place()
        blocking = asyncio.ensure_future(worker.call(block))
        await asyncio.get_running_loop().run_in_executor(None, busy.wait, 30)  # the thread is held
        queued = {name: asyncio.Event() for name in ("late", "early", "bad")}

        async def caller(name: str, its_place: int) -> str:
            from trajectory_compressor.summarize import oldest_first

            oldest_first._PLACE.set(its_place)
            queued[name].set()  # no await between this and the queueing
            return await worker.call(record, name)

        calls = []
        for name, its_place in (("late", 10**9 + 2), ("early", 10**9 + 1), ("bad", 10**9 + 3)):
            calls.append(asyncio.ensure_future(caller(name, its_place)))
            await queued[name].wait()
        may_go.set()
        return await asyncio.gather(blocking, *calls, return_exceptions=True)

    try:
        results = asyncio.run(scenario())
    finally:
        worker.close()
    assert results[:3] == ["blocked", "LATE", "EARLY"]
    assert isinstance(results[3], KeyError)
    assert ran == ["early", "late"]


def test_a_closed_worker_refuses_calls_and_its_thread_ends() -> None:
    worker = OrderedWorker("test-closing")

    async def scenario() -> None:
        assert await worker.call(sum, [1, 2]) == 3
        worker.close()
        with pytest.raises(RuntimeError, match="closed"):
            await worker.call(sum, [1])

    asyncio.run(scenario())
    assert worker._thread is not None
    worker._thread.join(timeout=10)
    assert not worker._thread.is_alive()


def test_a_task_keeps_its_place_and_a_new_task_takes_a_later_one() -> None:
    async def scenario() -> tuple[int, int, int]:
        async def one() -> tuple[int, int]:
            return place(), place()

        first, again = await asyncio.ensure_future(one())
        (later, _) = await asyncio.ensure_future(one())
        return first, again, later

    first, again, later = asyncio.run(scenario())
    assert first == again and later > first


def test_a_call_raising_stop_iteration_fails_its_caller_instead_of_hanging_it() -> None:
    worker = OrderedWorker("test-stop")

    async def scenario() -> None:
        with pytest.raises(RuntimeError, match="StopIteration"):
            await asyncio.wait_for(worker.call(next, iter([])), timeout=10)
        assert await worker.call(len, "abc") == 3  # the thread goes on

    try:
        asyncio.run(scenario())
    finally:
        worker.close()
