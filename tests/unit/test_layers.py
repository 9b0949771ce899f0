"""The package structure, checked from the source: no import cycles between the project's
modules (function-level and type-only imports included: a cycle hidden inside a function
or behind `if TYPE_CHECKING:` is still a cycle), and the layers import only downwards.

    engine, settings  <-  store, messaging  <-  api, worker        client talks HTTP only

`engine/` is the simulator and imports nothing of the service; `settings/` reads the
environment; `store/` (the database) knows the engine's Result but no web code;
`messaging/` is the message contract between the API and the workers (Celery, the embedded
broker); `client/` is a separate program over the public API.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "settings", "store", "messaging", "api", "worker", "client")
#: What each package may import of the others (itself always).
ALLOWED = {
    "engine": set(),
    "settings": set(),
    "store": {"engine", "settings"},
    "messaging": {"settings"},
    "worker": {"engine", "settings", "store", "messaging"},
    "api": {"engine", "settings", "store", "messaging"},
    "client": set(),
}
#: Third-party packages that would put web, broker or database code in the simulator.
ENGINE_FORBIDDEN = (
    "fastapi",
    "starlette",
    "sqlalchemy",
    "celery",
    "kombu",
    "redis",
    "psycopg",
    "alembic",
    "httpx",
    "uvicorn",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.Module, module: str, is_package: bool) -> set[str]:
    """Every module this one imports, in a function or for type checking alone too: a
    module that names another in a type hint depends on it as much (issue 26)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            found.add(prefix)
            # `from pkg import mod` imports a submodule when there is one.
            found.update(f"{prefix}.{alias.name}" for alias in node.names)
    return found


def _graph() -> dict[str, set[str]]:
    files = {
        _module_name(p): p
        for pkg in PACKAGES
        for p in (ROOT / pkg).rglob("*.py")
        if ".venv" not in p.parts
    }
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        targets = _imports(tree, name, path.name == "__init__.py")
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    graph = _graph()
    # A package's __init__ that re-exports its modules is not a cycle with them.
    for name in list(graph):
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    cycles = _cycles(graph)
    assert cycles == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_layers_import_downwards() -> None:
    bad = sorted(
        f"{a} imports {b}"
        for a, targets in _graph().items()
        for b in targets
        if b.split(".")[0] != a.split(".")[0] and b.split(".")[0] not in ALLOWED[a.split(".")[0]]
    )
    assert bad == []


def test_engine_has_no_service_imports() -> None:
    bad = []
    for path in (ROOT / "engine").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for target in _imports(tree, _module_name(path), path.name == "__init__.py"):
            if target.split(".")[0] in ENGINE_FORBIDDEN:
                bad.append(f"{_module_name(path)} imports {target}")
    assert bad == []


#: What the scenario language may import of the engine: itself, units, the variant registry
#: (names only), the worked example and the protocols' numbers; never the simulator.
SCENARIO_MAY = ("engine.scenario", "engine.units", "engine.variants", "engine.example",
                "engine.protocol")  # fmt: skip


def test_the_scenario_language_imports_nothing_of_the_simulator() -> None:
    bad = sorted(
        f"{a} imports {b}"
        for a, targets in _graph().items()
        if a.startswith("engine.scenario")
        for b in targets
        if b.startswith("engine.") and not b.startswith(SCENARIO_MAY)
    )
    assert bad == []


def test_the_checker_sees_a_cycle() -> None:
    """The checker itself: a two-module cycle hidden in a function is found."""
    graph = {"a": {"b"}, "b": {"a"}, "c": {"a"}}
    assert _cycles(graph) == [["a", "b"]]
    tree = ast.parse("def f():\n    from engine.tcp import sender\n")
    assert "engine.tcp.sender" in _imports(tree, "engine.x", False)
