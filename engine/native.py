"""Which build of the engine's per-packet modules runs: the compiled one, only while it
matches its sources, else pure Python, chosen once when `engine` is imported.

`scripts/compile_engine.py` (run by `make install`) compiles the modules with mypyc into
`engine/_native/`, apart from their sources, and writes `manifest.json` there last: each
module's binary and the sha256 of the source it was built from. Nothing is built in place,
so no binary ever shadows a `.py`. At import, `select()` checks the manifest against the
sources as they are now and, when every module matches, installs a finder that loads those
modules from `_native/`. Otherwise every module runs from its source and one warning says
why (an edited module, one the build did not compile, another interpreter, no compiler).

It is all or nothing: compiled modules call each other's functions and build each other's
classes natively, bypassing the import system, so one compiled module beside an edited
pure one would still run the stale copy of it.

`TCPFR_ENGINE_BUILD` chooses: `auto` (the default: compiled when it matches, else pure with
a warning), `pure` (no warning), `compiled` (an ImportError when the build cannot run: CI
uses it so that the tests cannot silently run pure Python).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

ENV = "TCPFR_ENGINE_BUILD"
PACKAGE_DIR = Path(__file__).resolve().parent
NATIVE_DIR = PACKAGE_DIR / "_native"
MANIFEST = NATIVE_DIR / "manifest.json"
#: The manifest's layout; a build of another layout is not read.
FORMAT = 1

Build = Literal["compiled", "pure"]


class EngineBuildWarning(UserWarning):
    """The compiled build cannot run here; the engine runs pure Python (said once)."""


def source_digest(path: Path) -> str:
    """What the build records of a source, and what the import compares: its sha256."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def module_name(path: Path) -> str:
    """`engine.tcp.sender` of `<package>/tcp/sender.py`."""
    rel = path.resolve().relative_to(PACKAGE_DIR).with_suffix("")
    return ".".join(("engine", *rel.parts))


def matched_sources(patterns: Sequence[str], exclude: Sequence[str]) -> list[Path]:
    """The sources the build's patterns (globs relative to the package) name now, in order,
    less `exclude` and package `__init__.py` files."""
    found: dict[Path, None] = {}
    for pattern in patterns:
        for path in sorted(PACKAGE_DIR.glob(pattern)):
            rel = path.relative_to(PACKAGE_DIR)
            if path.name != "__init__.py" and rel.as_posix() not in exclude:
                found[path] = None
    return list(found)


@dataclass(frozen=True)
class Choice:
    """The build this process runs, and why it is not the compiled one (None when it is)."""

    build: Build
    reason: str | None
    binaries: dict[str, Path]  # module name -> extension file, when compiled


def check(manifest: dict[str, Any]) -> str | None:
    """Why the build of `manifest` must not run with the sources as they are, or None."""
    if manifest.get("format") != FORMAT:
        return "the compiled build is of another format (run `make compile`)"
    if "unavailable" in manifest:
        return str(manifest["unavailable"])
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    if manifest.get("ext_suffix") != suffix:
        return f"the compiled build is for {manifest.get('ext_suffix')}, this Python loads {suffix}"
    modules: dict[str, dict[str, str]] = manifest["modules"]
    for name, entry in modules.items():
        source = PACKAGE_DIR / entry["source"]
        if not source.is_file():
            return f"engine/{entry['source']} was removed since the build ({name})"
        if source_digest(source) != entry["sha256"]:
            return f"engine/{entry['source']} changed since the build"
    for rel, digest in manifest.get("guarded", {}).items():
        path = PACKAGE_DIR / rel
        if not path.is_file() or source_digest(path) != digest:
            return f"engine/{rel} (whose Final constants the build inlined) changed"
    built = {entry["source"] for entry in modules.values()}
    for path in matched_sources(manifest["patterns"], manifest["exclude"]):
        rel = path.relative_to(PACKAGE_DIR).as_posix()
        if rel not in built:
            return f"engine/{rel} is new since the build"
    for rel in [*(e["binary"] for e in modules.values()), *manifest["support"].values()]:
        if not (NATIVE_DIR / rel).is_file():
            return f"engine/_native/{rel} is missing"
    return None


def choose(mode: str | None = None) -> Choice:
    """The build to run: `mode` as `TCPFR_ENGINE_BUILD` has it."""
    mode = (mode or os.environ.get(ENV) or "auto").strip().lower()
    if mode not in ("auto", "pure", "compiled"):
        raise ImportError(f"{ENV}={mode!r}: expected auto, pure or compiled")
    if mode == "pure":
        return Choice("pure", None, {})  # asked for: nothing to warn about
    try:
        manifest = json.loads(MANIFEST.read_text())
    except FileNotFoundError:
        reason: str | None = "there is no compiled build (run `make compile`)"
    except (OSError, ValueError) as exc:
        reason = f"the compiled build's manifest is unreadable ({exc})"
    else:
        try:
            reason = check(manifest)
        except (KeyError, TypeError, AttributeError) as exc:
            reason = f"the compiled build's manifest is malformed ({exc!r})"
    if reason is None:
        binaries = {
            name: NATIVE_DIR / entry["binary"] for name, entry in manifest["modules"].items()
        }
        binaries.update({name: NATIVE_DIR / rel for name, rel in manifest["support"].items()})
        return Choice("compiled", None, binaries)
    if mode == "compiled":
        raise ImportError(f"{ENV}=compiled, but the compiled engine cannot run: {reason}")
    return Choice("pure", reason, {})


class _Finder:
    """Finds the listed engine modules at the given files: compiled ones in `_native/`, and
    sources where a stray binary sits beside them (an old in-place build would shadow)."""

    def __init__(self, compiled: dict[str, Path], sources: dict[str, Path]):
        self.compiled = compiled
        self.sources = sources

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        binary = self.compiled.get(name)
        if binary is not None:
            loader: Any = importlib.machinery.ExtensionFileLoader(name, str(binary))
            spec = importlib.machinery.ModuleSpec(name, loader, origin=str(binary))
            spec.has_location = True
            return spec
        source = self.sources.get(name)
        if source is not None:
            loader = importlib.machinery.SourceFileLoader(name, str(source))
            spec = importlib.machinery.ModuleSpec(name, loader, origin=str(source))
            spec.has_location = True
            return spec
        return None


def _shadowed_sources() -> dict[str, Path]:
    """Engine sources with an extension module beside them (what `make compile` left in
    place before builds moved to `_native/`): Python would load the binary first."""
    out: dict[str, Path] = {}
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        for binary in PACKAGE_DIR.rglob("*" + suffix):
            if "_native" in binary.relative_to(PACKAGE_DIR).parts:
                continue
            source = binary.with_name(binary.name.removesuffix(suffix) + ".py")
            if source.is_file():
                out[module_name(source)] = source
    return out


_chosen: Choice | None = None


def select() -> Choice:
    """Choose once per process (engine/__init__.py asks first), install the finder, and
    warn once when the compiled build cannot run under `auto`."""
    global _chosen
    if _chosen is not None:
        return _chosen
    _chosen = choice = choose()
    sources = _shadowed_sources()
    if choice.binaries or sources:
        sys.meta_path.insert(0, _Finder(choice.binaries, sources))
    if choice.reason is not None:
        warnings.warn(
            f"the engine runs pure Python (about half the speed): {choice.reason}",
            EngineBuildWarning,
            stacklevel=3,
        )
    return choice


def engine_build() -> Build:
    """This process's build, as every Result records it (`Result.engine_build`)."""
    return select().build


if __name__ == "engine.native":  # not when scripts/compile_engine.py loads this file alone
    select()
