"""Machines made of Linux network namespaces, for tests of a deployment over several hosts.

`lan(["server", "w1", "w2"])` makes one namespace per host, each with its own interface
(`eth0`) and address on a private /24, all joined by a bridge in a switch namespace of
their own; the test's process (the root namespace) joins the LAN too, as a client, with
the last address. A host's processes are started through `Host.argv`, which also gives
them a hostname of their own (a UTS namespace) and can hide paths from them (a tmpfs over
the path, in their own mount namespace). `Host.take_away` is a machine lost whole: its
cable pulled and every process in it killed at once.

Everything is named `tcpfr-<pid>-<token>-...` and removed when the context ends, however
it ends; what a killed test process left behind is removed by the next one (its pid is
gone). Needs root, `ip` (iproute2), `unshare` and `mount`; CI runs as root.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import secrets
import shlex
import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from servicekit import unavailable

PREFIX = "tcpfr-"


def _ip(*args: str, check: bool = True) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def require_namespaces() -> None:
    """Skip (fail under CI=true) where namespaces cannot be made."""
    if os.geteuid() != 0:
        unavailable("root (to make network namespaces)")
    for tool in ("ip", "unshare", "mount", "runuser"):
        if shutil.which(tool) is None:
            unavailable(f"the {tool} command")


def _kill_all(netns: str) -> None:
    for pid in _ip("netns", "pids", netns, check=False).split():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)


def _remove(netns: str) -> None:
    _kill_all(netns)
    _ip("netns", "del", netns, check=False)


def remove_leftovers() -> None:
    """Namespaces of test processes that no longer exist (killed before they cleaned up)."""
    for line in _ip("netns", "list", check=False).splitlines():
        name = line.split()[0] if line.split() else ""
        found = re.match(rf"{PREFIX}(\d+)-", name)
        if found and not Path(f"/proc/{found.group(1)}").exists():
            _remove(name)


def _free_subnet() -> str:
    """A 10.x.y.0/24 that no route or address of this machine uses."""
    used = _ip("-4", "route", "show", "table", "all") + _ip("-4", "addr")
    for _ in range(100):
        subnet = f"10.{random.randrange(200, 250)}.{random.randrange(256)}"
        if f"{subnet}." not in used:
            return subnet
    raise RuntimeError("no free 10.x.y.0/24 for the test LAN")


@dataclass
class Host:
    name: str
    netns: str
    address: str
    root: Path  # its own working directory
    cable: str  # its link on the switch: deleting it disconnects the host

    def argv(self, argv: list[str], *, hide: tuple[Path, ...] = ()) -> list[str]:
        """`argv` run on this host: in its network namespace, with its hostname, and with
        each path of `hide` covered by an empty tmpfs (its own mount namespace: nobody
        else sees the cover)."""
        steps = [f"hostname {shlex.quote(self.name)}"]
        steps += [f"mount -t tmpfs -o size=64k hidden {shlex.quote(str(p))}" for p in hide]
        steps.append("exec " + shlex.join(argv))
        script = " && ".join(steps)
        return ["ip", "netns", "exec", self.netns, "unshare", "--uts", "sh", "-c", script]

    def pids(self) -> list[int]:
        return [int(p) for p in _ip("netns", "pids", self.netns, check=False).split()]

    def signal(self, sig: signal.Signals) -> None:
        """Every process on the host gets `sig` (SIGSTOP freezes the machine mid-step)."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def take_away(self, switch: str) -> int:
        """The machine lost whole: unplugged from the LAN and every process in it killed at
        once (SIGKILL, nothing flushed, no goodbye to the broker or the database). Returns
        how many processes died."""
        _ip("-n", switch, "link", "del", self.cable, check=False)
        pids = self.pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return len(pids)


@dataclass
class Lan:
    subnet: str
    switch: str  # the namespace holding the bridge
    hosts: dict[str, Host] = field(default_factory=dict)
    client_link: str = ""  # the root namespace's interface on the LAN

    @property
    def client_address(self) -> str:
        return f"{self.subnet}.254"


def _plug(lan: Lan, cable: str) -> None:
    """Put the veth end `cable` (in the root namespace) on the switch's bridge."""
    _ip("link", "set", cable, "netns", lan.switch)
    _ip("-n", lan.switch, "link", "set", cable, "master", "br0")
    _ip("-n", lan.switch, "link", "set", cable, "up")


@contextlib.contextmanager
def lan(names: list[str], tmp: Path) -> Iterator[Lan]:
    """Hosts `names` (the first gets address .1, the next .2 ...) on one LAN; all removed
    at the end, whatever happens."""
    require_namespaces()
    remove_leftovers()
    token = f"{os.getpid()}-{secrets.token_hex(3)}"
    short = secrets.token_hex(3)  # interface names: 15 characters at most
    subnet = _free_subnet()
    result = Lan(subnet=subnet, switch=f"{PREFIX}{token}-lan")
    made: list[str] = []
    try:
        _ip("netns", "add", result.switch)
        made.append(result.switch)
        _ip("-n", result.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", result.switch, "link", "set", "br0", "up")
        for i, name in enumerate(names, start=1):
            netns = f"{PREFIX}{token}-{name}"
            _ip("netns", "add", netns)
            made.append(netns)
            inside, cable = f"tf{short}{i}a", f"tf{short}{i}b"
            _ip("link", "add", inside, "type", "veth", "peer", "name", cable)
            _ip("link", "set", inside, "netns", netns)
            _ip("-n", netns, "link", "set", inside, "name", "eth0")
            _ip("-n", netns, "addr", "add", f"{subnet}.{i}/24", "dev", "eth0")
            _ip("-n", netns, "link", "set", "eth0", "up")
            _ip("-n", netns, "link", "set", "lo", "up")
            _plug(result, cable)
            root = tmp / name
            root.mkdir(parents=True, exist_ok=True)
            result.hosts[name] = Host(name, netns, f"{subnet}.{i}", root, cable)
        client, cable = f"tf{short}ca", f"tf{short}cb"
        _ip("link", "add", client, "type", "veth", "peer", "name", cable)
        result.client_link = client
        _ip("addr", "add", f"{result.client_address}/24", "dev", client)
        _ip("link", "set", client, "up")
        _plug(result, cable)
        yield result
    finally:
        if result.client_link:
            _ip("link", "del", result.client_link, check=False)
        for netns in reversed(made):
            _remove(netns)
