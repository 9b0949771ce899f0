import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from clikit import tcpfr
from servicekit import ROOT, Stack


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="module")
def t1_64k(pg_stack: Stack) -> dict[str, Any]:
    """`tcpfr run riverbed-t1-64k --wait --json`, as a user types it."""
    proc = tcpfr(pg_stack.base_url, "run", "riverbed-t1-64k", "--wait", "--json")
    assert proc.returncode == 0, (proc.stdout, proc.stderr, pg_stack.logs())
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


@pytest.fixture(params=["postgres", "sqlite"])
def migrated(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """Settings fields naming a database migrated to head, of either kind: a fresh
    PostgreSQL database (this module's), or the embedded default's SQLite under tmp_path.
    For tests that drive the store in process, on both databases a user may run."""
    if request.param == "postgres":
        return {"database_url": request.getfixturevalue("pg_database")}
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["TCPFR_DATA_DIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "alembic", "upgrade", "head"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return {"data_dir": tmp_path}
