"""The tcpfr client: ``Client`` for Python and notebooks, ``tcpfr`` for the shell
(``client.cli``). It speaks only the public HTTP API and imports nothing of the server."""

from client.api import Client
from client.errors import ApiError, ClientError, Failed, Unreachable
from client.handles import Advice, Run, Sweep

__all__ = [
    "Advice",
    "ApiError",
    "Client",
    "ClientError",
    "Failed",
    "Run",
    "Sweep",
    "Unreachable",
]
