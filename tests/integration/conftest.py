import json
from typing import Any

import pytest
from clikit import tcpfr
from servicekit import Stack


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
