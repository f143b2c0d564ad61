"""`make test` installs what the suite needs beyond .venv and needs no root for it: the
payments docs' Node client's packages (tests/node) when npm is there, reinstalled only
when their lock file changes. Planned with ``make -n`` on a copy of the Makefile."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.live_service import ROOT

MAKE = shutil.which("make")
NPM_CI = "npm ci --prefix tests/node"
pytestmark = pytest.mark.skipif(MAKE is None, reason="make is not installed")


@pytest.fixture
def checkout(tmp_path) -> Path:
    """The Makefile and the files its rules depend on, in a directory of their own."""
    for name in (
        "Makefile",
        "pyproject.toml",
        "clients/python/pyproject.toml",
        "tests/node/package.json",
        "tests/node/package-lock.json",
        "tests/mcp/modern/requirements.txt",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tmp_path / name)
    return tmp_path


def planned(checkout: Path, *, path: str | None = None) -> list[str]:
    env = dict(os.environ, PATH=path if path is not None else os.environ["PATH"])
    done = subprocess.run(
        [MAKE, "--no-print-directory", "-n", "test"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.splitlines()


def installed(checkout: Path) -> Path:
    marker = checkout / "tests/node/node_modules/.package-lock.json"
    marker.parent.mkdir(parents=True)
    marker.write_text("{}")
    lock = checkout / "tests/node/package-lock.json"
    os.utime(marker, (lock.stat().st_mtime + 10,) * 2)
    return marker


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_make_test_installs_the_node_packages_before_the_suite_in_a_fresh_clone(checkout):
    lines = planned(checkout)
    npm = [index for index, line in enumerate(lines) if line.startswith(NPM_CI)]
    pytest_run = [index for index, line in enumerate(lines) if "-m pytest" in line]
    assert len(npm) == 1 and len(pytest_run) == 1 and npm[0] < pytest_run[0], lines


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_make_test_installs_them_again_only_when_the_lock_file_changes(checkout):
    marker = installed(checkout)
    assert not any(line.startswith(NPM_CI) for line in planned(checkout))
    lock = checkout / "tests/node/package-lock.json"
    os.utime(lock, (marker.stat().st_mtime + 10,) * 2)
    assert any(line.startswith(NPM_CI) for line in planned(checkout))


def test_without_npm_make_test_still_runs_the_suite(checkout, tmp_path_factory):
    empty = tmp_path_factory.mktemp("no-npm-on-path")
    lines = planned(checkout, path=str(empty))
    assert not any("npm" in line for line in lines), lines
    assert any("-m pytest" in line for line in lines), lines


def test_ci_installs_only_system_packages_and_leaves_the_rest_to_make_test():
    script = (ROOT / ".ci" / "run").read_text()
    assert "npm ci" not in script and "pip install" not in script
    # nodejs and npm (apt) come before the first `make test`, so the Node test never skips.
    assert script.index("apt-get install -y -qq nodejs npm") < script.index("\nrun_suite ")
