"""The Ray tests share one xdist worker: marked `xdist_group("ray")` (`tests/conftest.py`), they are
sent to one worker by `--dist loadgroup` only if their node id ends in `@ray` when the worker
collects them, which pytest-xdist 3.8.0 alone no longer achieves under pytest 9.2."""

from __future__ import annotations

import pytest


@pytest.mark.ray
def test_a_ray_test_is_collected_into_the_ray_group(request: pytest.FixtureRequest) -> None:
    config = request.config
    if not hasattr(config, "workerinput") or not config.getvalue("loadgroup"):
        pytest.skip("run by pytest-xdist with --dist loadgroup (the test command) to see its group")
    assert request.node.nodeid.endswith("@ray")


def test_a_test_of_no_group_keeps_its_node_id(request: pytest.FixtureRequest) -> None:
    assert "@" not in request.node.nodeid
