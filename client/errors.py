"""The client's errors: the server refused (``ApiError``, with its problem document), could
not be reached (``Unreachable``), or a run, sweep or advice ended without succeeding
(``Failed``, from ``wait``)."""

from __future__ import annotations

from client.models import Problem


class ClientError(Exception):
    """Base of the client's errors."""


class Unreachable(ClientError):
    """The server could not be reached, or did not answer in time."""


class ApiError(ClientError):
    """The server refused the request; ``problem`` is its RFC 9457 document."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(f"{problem.status} {problem.title}: {problem.detail or ''}".rstrip(": "))
        self.problem = problem

    @property
    def status(self) -> int:
        return self.problem.status


class Failed(ClientError):
    """A run ended without succeeding (failed or cancelled), a sweep with runs that failed
    (failed, partial), or an advice that failed or was cancelled."""

    def __init__(self, what: str, status: str, message: str = "") -> None:
        super().__init__(f"{what} {status}" + (f": {message}" if message else ""))
        self.status = status
