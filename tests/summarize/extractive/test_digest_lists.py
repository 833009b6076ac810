"""The digest's lists read as the lists they stand for: written files first, short unambiguous names;
an error's call numbers across the digest and its new turns."""

from __future__ import annotations

import pytest

from trajectory_compressor.summarize.extractive.digest_lists import FileList, _Joined


def files() -> FileList:
    listed = FileList()
    listed.mention("src/a/util.py")
    listed.mention("src/b/util.py")
    listed.write("docs/readme.md")
    listed.mention("docs/readme.md")  # mentioned after it was written: still written
    listed.write("src/b/util.py")  # written after it was mentioned: moves to the written ones
    return listed


def test_written_files_come_first_each_by_its_shortest_unambiguous_name() -> None:
    listed = files()
    expected = [("b/util.py", True), ("readme.md", True), ("a/util.py", False)]
    assert list(listed) == expected and len(listed) == 3
    assert listed[-1] == expected[-1] and listed[0:2] == tuple(expected[:2]) and listed[::-1] == tuple(expected[::-1])
    with pytest.raises(IndexError):
        listed[3]


def test_an_earlier_summarys_files_follow_as_mentioned_and_rename_what_they_clash_with() -> None:
    listed = files()
    assert listed.with_mentions([]) is listed and listed.with_mentions(["docs/readme.md"]) is listed
    assert listed.with_mentions(["lib/util.py", "lib/util.py"]) == (
        ("b/util.py", True),
        ("readme.md", True),
        ("a/util.py", False),
        ("lib/util.py", False),
    )
    listed.write("lib/util.py")  # a new written file joins the written ones, in order of first mention
    assert list(listed) == [("b/util.py", True), ("readme.md", True), ("lib/util.py", True), ("a/util.py", False)]


def test_an_errors_call_numbers_read_across_the_digest_and_its_new_turns_as_one_list() -> None:
    joined = _Joined([3, 8, 12], [20, 31])
    expected = [3, 8, 12, 20, 31]
    assert len(joined) == 5 and list(joined) == expected
    for index in range(-5, 5):
        assert joined[index] == expected[index]
    for cut in (slice(None, 4), slice(2, None), slice(-2, None), slice(None, None, -1), slice(1, 4, 2)):
        assert joined[cut] == expected[cut]
    for outside in (5, -6):
        with pytest.raises(IndexError):
            joined[outside]
