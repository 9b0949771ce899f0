"""Compile the engine's per-packet modules with mypyc (an experiment: issue 11, 1,000 flows).

    .venv/bin/python scripts/compile_engine.py            # build in place (engine/**/*.so)
    .venv/bin/python scripts/compile_engine.py --into DIR # a copy of engine/ in DIR, compiled
    .venv/bin/python scripts/compile_engine.py --clean    # remove what a build left: pure again

Python imports an extension module before the .py beside it, so an in-place build replaces
these modules and a clean puts the sources back; nothing else changes. The results are the
same to the byte either way (every preset and the scale cases were compared). Without a C
compiler or mypyc the build is skipped with a warning and the engine stays pure Python
(`--strict` makes that an error). A compiled module does not see later edits to its .py:
build again, or clean, after changing one.

Compiled code checks argument and attribute types at run time: the unit tests that hand a
SimpleNamespace to a function typed for an Egress, a Packet or a TcpFlow (RED, BBR's rate
samples, the block sampler: 15 tests) fail against a compiled build; the others pass.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: What every packet's event runs through on a NewReno path, and the other strategies the
#: sender calls at the same points.
MODULES = [
    "engine/kernel.py",
    "engine/packet.py",
    "engine/net.py",
    "engine/recorder.py",
    "engine/trace.py",  # Trace.add: a call per ACK and per packet queued
    "engine/flows.py",
    "engine/tcp/state.py",
    "engine/tcp/sender.py",
    "engine/tcp/receiver.py",
    "engine/tcp/rtt.py",
    "engine/tcp/ranges.py",
    "engine/tcp/rate.py",
    "engine/tcp/cc/base.py",
    "engine/tcp/cc/slowstart.py",
    "engine/tcp/cc/cubic.py",  # these three subclass base.py's classes, which an
    "engine/tcp/cc/vegas.py",  # interpreted class cannot do once base.py is compiled
    "engine/tcp/cc/bbr.py",
    "engine/tcp/recovery/base.py",
    "engine/tcp/recovery/reno.py",
    "engine/tcp/recovery/prr.py",
    "engine/tcp/recovery/scoreboard.py",
    "engine/tcp/recovery/sack.py",
]
#: The shared library holding every compiled module: inside the package, as an editable
#: install puts only the packages on the path, not the repository's root.
GROUP = "engine._compiled"
BUILD_DIR = "build/mypyc"


def built_files(root: Path) -> list[Path]:
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    shims = [root / m.removesuffix(".py") for m in MODULES]
    shared = root / (GROUP.replace(".", "/") + f"__mypyc{suffix}")
    return [p.with_name(p.name + suffix) for p in shims] + [shared]


def clean(root: Path) -> None:
    for path in built_files(root):
        path.unlink(missing_ok=True)
    shutil.rmtree(root / BUILD_DIR, ignore_errors=True)


def compiler_missing() -> str | None:
    """Why a build cannot start here, or None."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        return f"no C compiler ({cc})"
    include = sysconfig.get_path("include")
    if not Path(include, "Python.h").exists():
        return f"no Python headers ({include})"
    try:
        import mypyc  # noqa: F401
    except ImportError:
        return "mypyc is not installed (pip install mypy)"
    return None


def build(root: Path) -> None:
    """Compile MODULES in place under `root` (which holds engine/ and pyproject.toml)."""
    from mypyc.build import mypycify
    from setuptools import Distribution

    os.chdir(root)  # mypy reads pyproject.toml's settings from here
    clean(root)
    extensions = mypycify(MODULES, opt_level="3", group_name=GROUP, target_dir=BUILD_DIR)
    dist = Distribution({"name": GROUP, "ext_modules": extensions})
    cmd = dist.get_command_obj("build_ext")
    cmd.inplace = True
    cmd.build_temp = BUILD_DIR
    cmd.build_lib = f"{BUILD_DIR}/lib"
    cmd.parallel = os.cpu_count()
    dist.run_command("build_ext")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clean", action="store_true", help="remove the compiled modules")
    parser.add_argument("--into", type=Path, help="compile a copy of engine/ in this directory")
    parser.add_argument("--strict", action="store_true", help="fail when it cannot compile")
    args = parser.parse_args()
    root = ROOT
    if args.into is not None:
        root = args.into.resolve()
        shutil.rmtree(root / "engine", ignore_errors=True)
        root.mkdir(parents=True, exist_ok=True)
        ignore = shutil.ignore_patterns("__pycache__", "*.so")
        shutil.copytree(ROOT / "engine", root / "engine", ignore=ignore)
        shutil.copy2(ROOT / "pyproject.toml", root / "pyproject.toml")
    if args.clean:
        clean(root)
        return 0
    reason = compiler_missing()
    if reason is not None:
        print(f"compile_engine: {reason}; the engine stays pure Python", file=sys.stderr)
        return 1 if args.strict else 0
    try:
        build(root)
    except (Exception, SystemExit) as exc:  # a failed build leaves pure Python working
        clean(root)
        print(
            f"compile_engine: build failed ({exc}); the engine stays pure Python", file=sys.stderr
        )
        return 1 if args.strict else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
