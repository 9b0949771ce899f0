"""The tcpfr client: ``Client`` for Python and notebooks, ``tcpfr`` for the shell
(``client.cli``). It speaks only the public HTTP API and imports nothing of the server."""

from client.api import ApiError, Client, ClientError, Failed, Run, Sweep, Unreachable

__all__ = ["ApiError", "Client", "ClientError", "Failed", "Run", "Sweep", "Unreachable"]
