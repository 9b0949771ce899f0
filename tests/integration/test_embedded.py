"""The embedded default, started as ``make run`` starts it: SQLite, the file-system broker,
real worker processes, no server to install."""

from journeys import bad_requests, happy_path
from servicekit import Stack


def test_preset_runs_to_success_over_http(embedded_stack: Stack) -> None:
    happy_path(embedded_stack)


def test_bad_requests_are_problems(embedded_stack: Stack) -> None:
    bad_requests(embedded_stack)
