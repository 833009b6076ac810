"""The files a shell command or a call's arguments name or write, and a command's gist."""

from __future__ import annotations

import pytest

from trajectory_compressor.summarize.toolcalls import command_gist, files_in, files_written_in


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ({"path": "/repo/src/app.py"}, ["/repo/src/app.py"]),
        ({"command": "view", "path": "/repo/x.py"}, ["/repo/x.py"]),
        ({"command": "cat astropy/modeling/separable.py | head -50"}, ["astropy/modeling/separable.py"]),
        ("sed -i 's/foo.py/bar/' pkg/mod.py", ["pkg/mod.py"]),
        ("cd /testbed && python ./reproduce.py 2>&1", ["reproduce.py"]),
        ("str_replace_editor str_replace /repo/x.py --old_str a", ["/repo/x.py"]),
        ("pytest tests/test_a.py::test_x -q", ["tests/test_a.py"]),
        ("grep -rn 'django.setup' --include='*.py' django/ | head", []),
        ("curl https://example.com/file.py", []),
        ("cat données/été.py", ["données/été.py"]),
        ("make -C build && cat Makefile", ["Makefile"]),
    ],
)
def test_files_in(source: str | dict[str, str], expected: list[str]) -> None:
    assert files_in(source) == expected


def test_files_in_ignores_here_document_bodies() -> None:
    command = "cat > test_fix.py << 'EOF'\nimport helper.py\nopen('data.json')\nEOF\npython test_fix.py"
    assert files_in(command) == ["test_fix.py"]


def test_files_in_ignores_content_arguments() -> None:
    args = {"command": "create", "path": "/repo/new.py", "file_text": "see other.py\n"}
    assert files_in(args) == ["/repo/new.py"]


@pytest.mark.parametrize(
    ("source", "tool", "expected"),
    [
        ("cat > out.py << 'EOF'\nx = a > b.py\nEOF", "", ["out.py"]),
        ("echo hi >> notes.md && python run.py 2>&1 > /dev/null", "", ["notes.md"]),
        ("sed -i 's/a/b/' pkg/mod.py && cat pkg/other.py", "", ["pkg/mod.py"]),
        ("python gen.py | tee result.txt", "", ["result.txt"]),
        ("cp pkg/mod.py.orig pkg/mod.py", "", ["pkg/mod.py"]),
        ("cat pkg/mod.py", "", []),
        ({"command": "str_replace", "path": "/r/a.py", "old_str": "x", "new_str": "y"}, "", ["/r/a.py"]),
        ({"command": "view", "path": "/r/a.py"}, "", []),
        ({"path": "notes.txt", "content": "hello"}, "write_file", ["notes.txt"]),
        ({"file_name": "a.py"}, "edit", ["a.py"]),
    ],
)
def test_files_written_in(source: str | dict[str, str], tool: str, expected: list[str]) -> None:
    assert files_written_in(source, tool) == expected


def test_command_gist() -> None:
    command = "cd /testbed && cat > t.py << 'EOF'\nimport os\nprint(os)\nEOF\npython t.py"
    assert command_gist(command) == "cat > t.py << 'EOF' [2 lines]\npython t.py"
    assert command_gist("edit 3:4\n    return a\n    pass\nend_of_edit") == "edit 3:4 [2 lines]"
