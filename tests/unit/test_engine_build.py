"""The compiled engine runs only while it matches its sources (engine/native.py), and gives
the same results as pure Python to the byte.

Each case imports a copy of the engine package (sources and engine/_native/) in a fresh
interpreter, after doing to the copy what a developer might: edit a compiled module, add
one, build on a machine without a C compiler, leave an old in-place binary. Without a
compiled build (the pure-Python job, or a machine without a compiler) they are skipped;
with TCPFR_ENGINE_BUILD=compiled, as CI runs them, a missing build fails instead.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine import native

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, warnings
warnings.simplefilter("always")  # count every warning, not the first per place
with warnings.catch_warnings(record=True) as caught:
    import engine, engine.kernel, engine.tcp.sender
from engine.native import engine_build
print(json.dumps({
    "build": engine_build(),
    "kernel": engine.kernel.__file__,
    "sender": engine.tcp.sender.__file__,
    "edited": getattr(engine.kernel, "EDITED_AFTER_THE_BUILD", False),
    "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
}))
"""

needs_build = pytest.mark.skipif(
    native.engine_build() != "compiled", reason="this process runs pure Python"
)


def _env(build: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != native.ENV}
    env[native.ENV] = build
    return env


def probe(root: Path, build: str = "auto") -> dict:
    """Import the engine at `root` (a directory holding engine/) in a new interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=root,  # first on sys.path: the copy, not the editable install
        env=_env(build),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of the engine package with its compiled build."""
    shutil.copytree(
        ROOT / "engine", tmp_path / "engine", ignore=shutil.ignore_patterns("__pycache__")
    )
    return tmp_path


@needs_build
def test_a_current_build_runs_compiled_without_a_word(copy: Path) -> None:
    got = probe(copy)
    assert got["build"] == "compiled"
    assert "/engine/_native/" in got["kernel"] and "/engine/_native/" in got["sender"]
    assert got["warnings"] == []


@needs_build
def test_an_edited_compiled_module_runs_as_pure_python_with_one_warning(copy: Path) -> None:
    kernel = copy / "engine" / "kernel.py"
    kernel.write_text(kernel.read_text() + "\nEDITED_AFTER_THE_BUILD = True\n")
    got = probe(copy)
    assert got["build"] == "pure"
    # The edit runs, from the source, and so does every other module (all or nothing).
    assert got["edited"] is True
    assert got["kernel"].endswith("engine/kernel.py") and got["sender"].endswith("sender.py")
    assert got["warnings"] == [
        "EngineBuildWarning: the engine runs pure Python (about half the speed): "
        "engine/kernel.py changed since the build"
    ]


@needs_build
def test_a_module_added_under_the_build_patterns_runs_everything_pure(copy: Path) -> None:
    # A new strategy would subclass a compiled base class, which mypyc's classes refuse.
    (copy / "engine" / "tcp" / "cc" / "newcomer.py").write_text("X = 1\n")
    got = probe(copy)
    assert got["build"] == "pure"
    assert got["warnings"] == [
        "EngineBuildWarning: the engine runs pure Python (about half the speed): "
        "engine/tcp/cc/newcomer.py is new since the build"
    ]


@needs_build
def test_asking_for_the_compiled_build_when_it_cannot_run_fails_the_import(copy: Path) -> None:
    kernel = copy / "engine" / "kernel.py"
    kernel.write_text(kernel.read_text() + "\n# edited\n")
    out = subprocess.run(
        [sys.executable, "-c", "import engine"],
        cwd=copy,
        env=_env("compiled"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0
    assert "engine/kernel.py changed since the build" in out.stderr


def test_a_build_without_a_compiler_says_why_once(copy: Path) -> None:
    shutil.rmtree(copy / "engine" / "_native", ignore_errors=True)
    (copy / "engine" / "_native").mkdir()
    reason = "no C compiler (cc) when the engine was built"
    manifest = {"format": native.FORMAT, "unavailable": reason, "missing": True}
    (copy / "engine" / "_native" / "manifest.json").write_text(json.dumps(manifest))
    got = probe(copy)
    assert got["build"] == "pure"
    assert got["warnings"] == [
        f"EngineBuildWarning: the engine runs pure Python (about half the speed): {reason}"
    ]
    assert probe(copy, "pure")["warnings"] == []  # asked for: nothing to say


def test_a_binary_left_beside_its_source_is_never_loaded(copy: Path) -> None:
    # What `make compile` built in place before engine/_native/: Python's own finder
    # would load it before the .py. Not an extension at all here: loading it would fail.
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (copy / "engine" / "tcp" / ("sender" + suffix)).write_bytes(b"not an extension")
    got = probe(copy, "pure")
    assert got["build"] == "pure" and got["sender"].endswith("engine/tcp/sender.py")


@needs_build
def test_both_builds_give_the_same_results_to_the_byte(tmp_path: Path) -> None:
    """Three cheap cases of bench/goldens.py (a seed preset, a lossy variant, SACK), each
    digested whole but for wall_time and engine_build, in each build."""
    cases = "preset:riverbed-t1-64k,preset:hadi-bottleneck,variant:tahoe"
    files = {}
    for build in ("pure", "compiled"):
        files[build] = tmp_path / f"{build}.json"
        out = subprocess.run(
            [
                sys.executable,
                str(ROOT / "bench" / "goldens.py"),
                "--only",
                cases,
                "--jobs",
                "1",
                "--write",
                str(files[build]),
            ],
            env=_env(build),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stderr
    pure, compiled = (json.loads(files[b].read_text()) for b in ("pure", "compiled"))
    assert len(pure) == 3
    assert {k: v["digest"] for k, v in pure.items()} == {
        k: v["digest"] for k, v in compiled.items()
    }
