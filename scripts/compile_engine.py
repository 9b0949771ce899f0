"""Compile the engine's per-packet modules with mypyc into engine/_native/ (issue 28).

    .venv/bin/python scripts/compile_engine.py           # build, unless the build is current
    .venv/bin/python scripts/compile_engine.py --force   # build again
    .venv/bin/python scripts/compile_engine.py --strict  # a build that cannot be made fails
    .venv/bin/python scripts/compile_engine.py --clean   # remove every build: pure Python

`make install`, `make run` and the Docker image run it; CI with `--strict`. The binaries go
to engine/_native/ with a manifest, written last, of the sha256 of each source they were
built from; `engine.native` loads them only while every source still matches and runs pure
Python otherwise, with one warning. Nothing is built in place: a `.py` is never shadowed.

MODULES says what is compiled: globs relative to engine/. A literal path that names no file,
or a glob that matches none, fails the build (a module renamed under the list must not
drop out of it unseen), and so does a module mypyc cannot compile. A module the globs match
that must stay interpreted goes in EXCLUDE. A module left out may not subclass a compiled
class (mypyc's native classes reject interpreted subclasses): hence all of engine/tcp/.

Without a C compiler, Python's headers or mypyc the build is skipped: the manifest records
why, the engine says so once at import, and `--strict` makes it an error. A failed build
is recorded the same way and not retried until a source changes.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
import sysconfig
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _load_native() -> ModuleType:
    """engine/native.py alone: importing the engine package would choose a build and load
    the very binaries this script replaces."""
    spec = importlib.util.spec_from_file_location("engine_native", ROOT / "engine/native.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


native = _load_native()

#: What every packet's event runs through, and every strategy the sender calls.
MODULES = [
    "kernel.py",
    "packet.py",
    "protocol.py",  # header sizes, Final: folded into the compiled modules that read them
    "net.py",
    "recorder.py",
    "sampler.py",  # the rate series' beat, every sample_interval
    "trace.py",  # Trace.add: a call per ACK and per packet queued
    "budget.py",  # the run's point budget, which a full Trace asks to grow
    "flows.py",
    "accounting.py",  # every send attempt asks it why the sender stops
    "host.py",  # a backpressure sender asks it before and after every data segment
    "shaping.py",  # a shaped port's every packet
    "tcp/**/*.py",  # the whole TCP stack: its strategies subclass each other's bases
]
#: Modules the globs match that stay interpreted (none today).
EXCLUDE: list[str] = []
#: The shared library holding every compiled module: engine/_native/_tcpfr_engine__mypyc….
#: A top-level name, as mypyc places such a library above the package tree (it derives each
#: module's __file__ from it); engine.native's finder is what imports it.
GROUP = "_tcpfr_engine"
BUILD_DIR = ROOT / "build" / "mypyc"
FINAL = re.compile(r"^\s*[\w.]+\s*:\s*(?:typing\.)?Final\b", re.MULTILINE)  # `X: Final = 1`


class BuildError(Exception):
    """The build cannot be made; its message says why."""


def sources() -> list[Path]:
    """MODULES resolved against engine/; a pattern that names nothing is an error."""
    for pattern in MODULES:
        if not list(native.PACKAGE_DIR.glob(pattern)):
            raise BuildError(f"MODULES names engine/{pattern}, which matches no file")
    found = native.matched_sources(MODULES, EXCLUDE)
    for rel in EXCLUDE:
        if not (native.PACKAGE_DIR / rel).is_file():
            raise BuildError(f"EXCLUDE names engine/{rel}, which does not exist")
    return found


def guarded(compiled: list[Path]) -> dict[str, str]:
    """Interpreted engine modules that declare a Final: mypyc inlines such constants into
    the modules that use them, so the build depends on their sources too."""
    out = {}
    for path in sorted(native.PACKAGE_DIR.rglob("*.py")):
        rel = path.relative_to(native.PACKAGE_DIR)
        interpreted = path not in compiled and "_native" not in rel.parts
        if interpreted and FINAL.search(path.read_text()):
            out[rel.as_posix()] = native.source_digest(path)
    return out


def compiler_missing() -> str | None:
    """Why a build cannot start here, or None."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        return f"no C compiler ({cc}) when the engine was built"
    include = sysconfig.get_path("include")
    if not Path(include, "Python.h").exists():
        return f"no Python headers ({include}) when the engine was built"
    try:
        import mypyc  # noqa: F401
    except ImportError:
        return "mypyc was not installed when the engine was built (pip install mypy)"
    return None


def inputs_digest() -> str:
    """One digest of everything a build reads (mypy follows imports through the whole
    engine, and reads pyproject.toml): a failed build is retried once it moves."""
    h = hashlib.sha256(json.dumps([MODULES, EXCLUDE, sys.version]).encode())
    for path in [
        Path(__file__),
        ROOT / "pyproject.toml",
        *sorted(native.PACKAGE_DIR.rglob("*.py")),
    ]:
        h.update(path.name.encode())
        h.update(native.source_digest(path).encode())
    return h.hexdigest()


def clean() -> None:
    """Remove every build: engine/_native/, the C files, and binaries an in-place build
    (before engine/_native/) left beside the sources."""
    shutil.rmtree(native.NATIVE_DIR, ignore_errors=True)
    shutil.rmtree(BUILD_DIR, ignore_errors=True)
    for suffix in EXTENSION_SUFFIXES:
        for stray in native.PACKAGE_DIR.rglob("*" + suffix):
            stray.unlink()


def write_manifest(manifest: dict[str, object]) -> None:
    native.NATIVE_DIR.mkdir(exist_ok=True)
    tmp = native.MANIFEST.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    tmp.replace(native.MANIFEST)  # last, and at once: a half-made build is never loaded


@contextmanager
def _parallel_compile() -> Iterator[None]:
    """The C files of one extension on every core: distutils compiles them one by one, and
    the group's library is one extension of some forty files."""
    from setuptools._distutils.ccompiler import CCompiler

    serial = CCompiler.compile

    def compile_all(self: CCompiler, sources: list[str], *args: Any, **kwargs: Any) -> Any:
        with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            parts = pool.map(lambda src: serial(self, [src], *args, **kwargs), sources)
            return [obj for objects in parts for obj in objects]

    CCompiler.compile = compile_all  # type: ignore[method-assign]
    try:
        yield
    finally:
        CCompiler.compile = serial  # type: ignore[method-assign]


def compile_modules(files: list[Path]) -> dict[str, Path]:
    """Run mypyc and the C compiler on `files`; the extension files, by module name."""
    from mypyc.build import mypycify
    from setuptools import Distribution

    os.chdir(ROOT)  # mypy reads pyproject.toml's settings from here
    shutil.rmtree(BUILD_DIR, ignore_errors=True)
    paths = [p.relative_to(ROOT).as_posix() for p in files]
    # One C file per module (multi_file) rather than one of 6 MB: smaller units compile
    # in less time in all, and on every core (_parallel_compile).
    extensions = mypycify(
        paths, opt_level="3", group_name=GROUP, target_dir=str(BUILD_DIR), multi_file=True
    )
    dist = Distribution({"name": GROUP, "ext_modules": extensions})
    cmd = dist.get_command_obj("build_ext")
    cmd.inplace = False
    cmd.build_temp = str(BUILD_DIR)
    cmd.build_lib = str(BUILD_DIR / "lib")
    with _parallel_compile():
        dist.run_command("build_ext")
    suffix = EXTENSION_SUFFIXES[0]
    out = {}
    for binary in (BUILD_DIR / "lib").rglob("*" + suffix):
        rel = binary.relative_to(BUILD_DIR / "lib").as_posix().removesuffix(suffix)
        out[rel.replace("/", ".")] = binary
    return out


def build(files: list[Path]) -> dict[str, object]:
    """Compile `files` into engine/_native/ and return its manifest (not yet written)."""
    import mypy.version

    digests = {p: native.source_digest(p) for p in files}  # what is compiled, read first
    depends = guarded(files)
    started = time.perf_counter()
    binaries = compile_modules(files)
    modules, support = {}, {}
    staged = native.NATIVE_DIR
    shutil.rmtree(staged, ignore_errors=True)
    for name, binary in binaries.items():
        rel = binary.relative_to(BUILD_DIR / "lib").as_posix()
        (staged / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(binary, staged / rel)
        support[name] = rel
    for path, digest in digests.items():
        name = native.module_name(path)
        if name not in support:
            raise BuildError(f"mypyc made no extension for {name}")
        source = path.relative_to(native.PACKAGE_DIR).as_posix()
        modules[name] = {"source": source, "sha256": digest, "binary": support.pop(name)}
    return {
        "format": native.FORMAT,
        "compiler": f"mypyc {mypy.version.__version__}",
        "python": sys.version.split()[0],
        "ext_suffix": EXTENSION_SUFFIXES[0],
        "patterns": MODULES,
        "exclude": EXCLUDE,
        "modules": modules,
        "support": support,
        "guarded": depends,
        "inputs": inputs_digest(),
        "build_seconds": round(time.perf_counter() - started, 1),
    }


def current(files: list[Path]) -> str | None:
    """Why no build is needed (the build matches the sources, or a recorded failure has
    the same inputs and cause), or None."""
    try:
        manifest = json.loads(native.MANIFEST.read_text())
    except (OSError, ValueError):
        return None
    if manifest.get("inputs") != inputs_digest():
        return None
    if "unavailable" in manifest:
        if manifest.get("missing") and compiler_missing() is None:
            return None  # a compiler has arrived since
        return f"not built again: {manifest['unavailable']}"
    try:
        reason = native.check(manifest)
    except (KeyError, TypeError, AttributeError):
        return None
    return None if reason else "the compiled engine is current"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clean", action="store_true", help="remove every build")
    parser.add_argument("--force", action="store_true", help="build even when current")
    parser.add_argument("--strict", action="store_true", help="fail when it cannot build")
    args = parser.parse_args()
    if args.clean:
        clean()
        return 0
    try:
        files = sources()
    except BuildError as exc:
        print(f"compile_engine: {exc}", file=sys.stderr)
        return 1
    done = None if args.force else current(files)
    if done is not None:
        print(f"compile_engine: {done}")
        return 1 if args.strict and done.startswith("not built") else 0
    clean()
    missing = compiler_missing()
    failure = missing
    if missing is None:
        print(f"compile_engine: compiling {len(files)} modules with mypyc ...", flush=True)
        started = time.perf_counter()
        try:
            manifest = build(files)
        except SystemExit:  # mypy's way of saying it printed errors
            failure = "the engine's build failed (mypyc's errors are printed above)"
        except Exception as exc:  # a failed build leaves pure Python working
            failure = f"the engine's build failed ({type(exc).__name__}: {exc})"
        else:
            write_manifest(manifest)
            print(f"compile_engine: built in {time.perf_counter() - started:.0f} s")
            return 0
        clean()
    write_manifest(
        {
            "format": native.FORMAT,
            "unavailable": failure,
            "missing": missing is not None,
            "inputs": inputs_digest(),
        }
    )
    print(f"compile_engine: {failure}; the engine stays pure Python", file=sys.stderr)
    return 1 if args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
