"""The citations app's own layers: api -> tasks -> services -> selectors, never back up.

Read from the source (every import, also those inside a function), so a lazy import
cannot hide an arrow that runs the wrong way.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "citations"

# For each part of the app, the parts above it that it must never import.
FORBIDDEN = {
    "selectors": ("citations.api", "citations.tasks", "citations.services"),
    "services": ("citations.api", "citations.tasks"),
}


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def upward_imports(part: str) -> list[str]:
    found = []
    for path in sorted((APP / part).rglob("*.py")):
        for name in sorted(imported_modules(path)):
            for above in FORBIDDEN[part]:
                if name == above or name.startswith(above + "."):
                    found.append(f"{path.relative_to(APP)} imports {name}")
    return found


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_no_part_of_the_app_imports_one_above_it(part):
    assert (APP / part).is_dir()
    assert upward_imports(part) == []


def test_the_check_sees_a_lazy_import(tmp_path, monkeypatch):
    services = tmp_path / "services"
    services.mkdir()
    (services / "rebuilds.py").write_text(
        "def start():\n    from citations.tasks import project_rebuild\n"
    )
    monkeypatch.setattr("tests.citations.test_layout.APP", tmp_path)
    assert upward_imports("services") == [
        "services/rebuilds.py imports citations.tasks",
        "services/rebuilds.py imports citations.tasks.project_rebuild",
    ]
