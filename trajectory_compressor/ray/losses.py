"""What of the cluster a Ray error says was lost, in a few words: the one line a run ends with.

Ray reports a lost node, actor or worker process through its own exception types, wrapped by
Ray Data's (a task's error holds the worker's, `cause` or `__cause__`), and sometimes only as
text. A run that such a loss ends says what died and that the same command resumes (exit
`LOST`); a worker's own `UsageError` / `RunAborted` is found the same way.
"""

from __future__ import annotations

import re

from trajectory_compressor.errors import RunAborted, UsageError

LOSS_NAMES = ("NodeDiedError", "ActorDiedError", "ActorUnavailableError", "WorkerCrashedError", "ObjectLostError",
              "OwnerDiedError")  # fmt: skip


def describe_loss(exc: BaseException) -> str | None:
    """What of the cluster was lost, in a few words, when `exc` (or what it wraps) says a node,
    an actor or a worker process died; None for any other error."""
    import ray.exceptions as rx

    from trajectory_compressor.ray.limits import LOST_LIMITS

    said = re.search(re.escape(LOST_LIMITS) + r" \(\w+\)", _chain_text(exc))
    if said:  # a worker's own word (Ray Data passes a worker's exception on as text only)
        return said.group(0)
    seen: set[int] = set()
    current: BaseException | None = exc
    text = ""
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text += f" {type(current).__name__}: {current}"
        if isinstance(current, (rx.NodeDiedError, rx.LocalRayletDiedError)):
            return f"a Ray node was lost ({type(current).__name__})"
        if isinstance(current, rx.RayActorError):
            named = re.search(r"class_name: ([\w()]+)", str(current))
            actor = f"the Ray actor {named.group(1)}" if named else "a Ray actor"
            return f"{actor} was lost ({type(current).__name__})"
        if isinstance(current, rx.WorkerCrashedError):
            return "a Ray worker process was lost (WorkerCrashedError)"
        if isinstance(current, (rx.ObjectLostError, rx.OwnerDiedError)):
            return f"rows held by a lost Ray node were lost ({type(current).__name__})"
        current = getattr(current, "cause", None) or current.__cause__ or current.__context__
    for name in LOSS_NAMES:
        if name in text:
            return f"a Ray node or worker was lost ({name})"
    return None


def _chain_text(exc: BaseException) -> str:
    seen: set[int] = set()
    current: BaseException | None = exc
    text = ""
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text += f" {current}"
        current = getattr(current, "cause", None) or current.__cause__ or current.__context__
    return text


def user_cause(exc: BaseException) -> BaseException:
    """The exception a worker raised, out of Ray's wrappers (`RayTaskError.cause`, `__cause__`)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    found: BaseException | None = None
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (UsageError, RunAborted)):
            found = current  # the innermost: Ray's wrapper is an instance too, with its traceback as text
        elif found is not None:
            break
        current = getattr(current, "cause", None) or current.__cause__
    return found or exc
