"""The one version this service reports: the package's (pyproject.toml, read from the
installed distribution's metadata), in /openapi.json's `info.version` and /healthz, with the
engine's version beside it (part of every result's identity, so it moves on its own)."""

from __future__ import annotations

from importlib.metadata import version

from engine import ENGINE_VERSION

API_VERSION = version("tcpfr")

__all__ = ["API_VERSION", "ENGINE_VERSION"]
