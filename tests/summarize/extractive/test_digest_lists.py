"""The digest's file list read as the list it stands for: written files first, short unambiguous names."""

from __future__ import annotations

import pytest

from trajectory_compressor.summarize.extractive.digest_lists import FileList


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
