"""The layout ARCHITECTURE.md promises: imports run one way along the pipeline.

A folder (or top-level module) may import from its own layer and the layers before it, never
from a later one; a later stage is reachable only from the ways in. Imports inside functions
count (a lazy import is still a dependency); an import under `if TYPE_CHECKING:` names a type
for an annotation only and is not followed at run time, so it is left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "trajectory_compressor"

# Earliest first; ARCHITECTURE.md's "Rules the layout keeps" lists the same order.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"types", "errors", "exit_codes", "messages", "faults", "settings"}),
    frozenset({"read"}),
    frozenset({"count"}),
    frozenset({"plan"}),
    frozenset({"summarize"}),
    frozenset({"write"}),
    frozenset({"run"}),
    frozenset({"ray"}),
    frozenset({"commands", "api", "training"}),
    frozenset({"cli", "__init__", "__main__"}),
)


def _layer(part: str) -> int:
    return next(number for number, layer in enumerate(LAYERS) if part in layer)


def _part(module: str) -> str:
    """The folder or top-level module of `trajectory_compressor.<part>...`."""
    return module.split(".")[1] if "." in module else "__init__"


def _runtime_imports(tree: ast.Module) -> list[ast.ImportFrom | ast.Import]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for inner in node.body for child in ast.walk(inner))
    return [
        node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skipped
    ]


def _package_imports(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return [node.module] if node.module and node.module.startswith("trajectory_compressor.") else []
    return [alias.name for alias in node.names if alias.name.startswith("trajectory_compressor.")]


def test_every_part_of_the_package_has_a_layer() -> None:
    parts = {path.relative_to(PACKAGE).parts[0].removesuffix(".py") for path in PACKAGE.glob("*")}
    parts -= {"__pycache__", "py.typed"}
    unplaced = sorted(part for part in parts if not any(part in layer for layer in LAYERS))
    assert not unplaced, f"place these in LAYERS (and ARCHITECTURE.md): {unplaced}"


def test_imports_run_one_way_along_the_pipeline() -> None:
    backwards = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            for module in _package_imports(node):
                target = _part(module)
                if _layer(target) > _layer(source):
                    backwards.append(f"{path.relative_to(PACKAGE)}:{node.lineno} imports {module}")
    assert not backwards, "imports against the pipeline's direction:\n" + "\n".join(backwards)


MAX_MODULE_LINES = 450
MAX_CLASS_LINES = 250


def test_no_module_over_450_lines_and_no_class_over_250() -> None:
    """STYLE's sizes: past them a module or class holds more than one job; split it along its seams."""
    too_big = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            too_big.append(f"{path.relative_to(PACKAGE)}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                length = node.end_lineno - node.lineno + 1
                if length > MAX_CLASS_LINES:
                    too_big.append(f"{path.relative_to(PACKAGE)}: class {node.name} {length} lines")
    assert not too_big, "\n".join(too_big)
