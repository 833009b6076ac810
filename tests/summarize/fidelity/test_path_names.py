"""One file named by several paths (`/testbed/x/a.py`, `x/a.py`, `a.py`) is one file: in the
digest's list, in the item scores and in the future-grounded fidelity."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from trajectory_compressor.summarize.extractive.digest_lists import FileList
from trajectory_compressor.summarize.fidelity import windows
from trajectory_compressor.summarize.fidelity.anchors import score_future
from trajectory_compressor.summarize.fidelity.path_names import PathNames
from trajectory_compressor.summarize.fidelity.salient import SalientItems
from trajectory_compressor.summarize.fidelity.score import row_text, score_items
from trajectory_compressor.types import Turn


def test_a_path_ending_one_files_path_is_that_file_and_one_ending_two_is_neither() -> None:
    names = PathNames(["reproduce.py", "/repo/reproduce.py", "pkg/handler.py", "/repo/pkg/handler.py"])
    names.extend(["/repo/overlays/handler.py", "handler.py"])  # `handler.py` now ends two files
    assert names.longest == ["/repo/reproduce.py", "/repo/pkg/handler.py", "/repo/overlays/handler.py", "handler.py"]
    assert names.paths[0] == ["reproduce.py", "/repo/reproduce.py"]  # a shorter name first, then its longer one
    assert [names.short_name(file) for file in range(4)] == [
        "reproduce.py",
        "pkg/handler.py",
        "overlays/handler.py",
        "handler.py",
    ]
    assert names.unique("pkg/handler.py") == ["pkg/handler.py"]  # `repo/...`, after the leading "/", is no short name
    assert names.owner("reproduce.py") == ["reproduce.py", "/repo/reproduce.py"] and names.owner("handler.py") == ()
    assert names.file_of("/repo/pkg/handler.py") == names.file_of("pkg/handler.py") == 1 and len(names) == 6


def test_a_later_path_that_makes_a_short_one_ambiguous_leaves_it_with_the_file_it_named() -> None:
    names = PathNames(["a.py", "/t/x/a.py", "/t/y/a.py"])
    assert names.paths == [["a.py", "/t/x/a.py"], ["/t/y/a.py"]]
    assert [names.short_name(file) for file in range(2)] == ["x/a.py", "y/a.py"]
    copied = names.copy()
    assert copied.add("y/a.py") == 1 and names.file_of("y/a.py") is None  # a copy numbers the files the same


_PATHS = st.lists(
    st.lists(st.sampled_from(["t", "x", "y", "a.py", "b.py"]), min_size=1, max_size=4).map("/".join)
    | st.lists(st.sampled_from(["t", "x", "a.py"]), min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts)),
    max_size=12,
)


@given(_PATHS)
def test_files_group_only_tails_and_each_short_name_names_its_file_alone(paths: list[str]) -> None:
    names = PathNames(paths)
    assert sorted(path for file in names.paths for path in file) == sorted(set(paths))
    for file, longest in enumerate(names.longest):
        assert all(longest == path or longest.endswith("/" + path) for path in names.paths[file])
        short = names.short_name(file)
        assert short == longest or longest.endswith("/" + short)
        others = [other for index, other in enumerate(names.longest) if index != file]
        if short != longest:
            assert not any(other == short or other.endswith("/" + short) for other in others)


def test_the_digest_lists_a_file_once_by_its_short_name_and_written_if_any_name_was() -> None:
    listed = FileList()
    listed.mention("/testbed/django/db/models/query.py")
    listed.mention("/testbed/reproduce_issue.py")
    listed.write("django/db/models/query.py")  # the same file, relative to the folder the agent works in
    listed.mention("reproduce_issue.py")
    listed.mention("query.py")
    assert list(listed) == [("query.py", True), ("reproduce_issue.py", False)]
    assert listed.with_mentions(["models/query.py", "/other/query.py"]) == (
        ("models/query.py", True),
        ("reproduce_issue.py", False),
        ("/other/query.py", False),  # no tail after a "/" but the first names it alone
    )


def test_a_short_name_states_every_path_of_its_file_in_the_scores() -> None:
    items = SalientItems(paths=("/testbed/django/db/models/query.py", "django/db/models/query.py", "setup.py"))
    corpus = row_text([Turn("tool", "x")])
    fidelity = score_items(items, "Edited query.py, then ran setup.py.", corpus)
    assert fidelity.found["paths"] == 3 and fidelity.missed["paths"] == ()
    future = score_future(["/testbed/django/db/models/query.py", "django/db/models/query.py", "QuerySet"], "query.py")
    assert future.missed == ("QuerySet",)


_FOLDERS = st.lists(st.sampled_from(["t", "x", "", ".", "m d", "é"]), max_size=3)
_NAMED = st.lists(
    st.tuples(_FOLDERS, st.sampled_from(["a.py", "b"])).map(lambda parts: "/".join([*parts[0], parts[1]])),
    max_size=10,
    unique=True,
)


@given(_NAMED, st.lists(st.integers(0, 40), max_size=4))
def test_the_windows_count_finds_the_paths_the_item_scores_find(paths: list[str], picks: list[int]) -> None:
    """`_counted` (a region of many items) and `score_items` take the same names for a file: not
    the tail after a leading `/` (`x/a.py` is no short name of `/x/a.py`)."""
    names = PathNames(paths)
    said = sorted({*paths, *names.tails()})
    summary = " ".join(f"saw {said[pick % len(said)]};" for pick in picks) if said else ""
    items = SalientItems(paths=tuple(paths))
    corpus = row_text([Turn("tool", "x")])
    sorted_ = windows._Sorted()
    sorted_.extend(items)
    counted = windows._counted(items, sorted_, summary, corpus, PathNames(paths))
    assert counted.found["paths"] == score_items(items, summary, corpus, PathNames(paths)).found["paths"]


def test_the_windows_count_takes_no_tail_after_a_leading_slash_for_its_file() -> None:
    items = SalientItems(paths=("/testbed/x/a.py", "/tmp/x/a.py"))
    sorted_ = windows._Sorted()
    sorted_.extend(items)
    corpus = row_text([Turn("tool", "x")])
    counted = windows._counted(items, sorted_, "Edited testbed/x/a.py.", corpus, PathNames(items.paths))
    assert counted.found["paths"] == score_items(items, "Edited testbed/x/a.py.", corpus).found["paths"] == 0


def test_a_path_after_a_double_slash_is_another_file_and_the_digests_name_states_it() -> None:
    """`/a.py` is no name of `t//a.py` (that is `t/a.py`): joined, the digest named both `a.py`,
    which no score takes for `/a.py` (no short name after a leading `/`)."""
    assert PathNames(["/a.py", "t//a.py"]).paths == [["/a.py"], ["t//a.py"]]
    listed = FileList()
    listed.mention("/a.py")
    names = [name for name, _ in listed.with_mentions(["t//a.py"])]
    assert names == ["/a.py", "t//a.py"]
    fidelity = score_items(SalientItems(paths=("/a.py",)), f"Read {names[0]}.", row_text([Turn("tool", "x")]))
    assert fidelity.missed["paths"] == ()


_FILE = st.tuples(st.lists(st.sampled_from(["t", "x", "", "."]), max_size=3), st.sampled_from(["a.py", "b.py"])).map(
    lambda parts: "/".join([*parts[0], parts[1]])
)


@given(st.lists(st.tuples(_FILE, st.booleans()), max_size=10), st.lists(_FILE, max_size=4))
def test_every_name_the_digest_prints_states_each_path_of_its_file(
    calls: list[tuple[str, bool]], earlier: list[str]
) -> None:
    listed = FileList()
    for path, written in calls:
        (listed.write if written else listed.mention)(path)
    names = [name for name, _ in (listed.with_mentions(earlier) if earlier else listed)]
    assert len(set(names)) == len(names)
    summary = "Files: " + ", ".join(names) + "."
    paths = list(dict.fromkeys(path for path, _ in calls))
    assert score_items(SalientItems(paths=tuple(paths)), summary, row_text([Turn("tool", "x")])).missed["paths"] == ()
    assert score_future(paths, summary).missed == ()
