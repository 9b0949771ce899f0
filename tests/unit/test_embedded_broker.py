"""The embedded broker never hands a worker half a message: kombu's file-system transport
wrote into the queue folder in place, and a reader polling it could take a file before its
last byte (a JSONDecodeError that stopped the worker)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from kombu import Connection

from messaging import filesystem as broker

pytestmark = pytest.mark.unit


def _connection(folder: Path, scheme: str) -> Connection:
    queue = str(folder / "queue")
    Path(queue).mkdir(parents=True, exist_ok=True)
    return Connection(
        f"{scheme}://",
        transport_options={
            "data_folder_in": queue,
            "data_folder_out": queue,
            "store_processed": True,
            "processed_folder": str(folder / "processed"),
            "control_folder": str(folder / "control"),
            "polling_interval": 0.0,
        },
    )


def _race(folder: Path, scheme: str, messages: int = 150) -> list[str]:
    """A writer puts big messages while a reader takes each file as soon as it appears."""
    (folder / "processed").mkdir(parents=True, exist_ok=True)
    payload = "x" * 400_000
    errors: list[str] = []
    got = 0
    with _connection(folder, scheme) as writer_conn, _connection(folder, scheme) as reader_conn:
        put = writer_conn.SimpleQueue("runs")
        take = reader_conn.SimpleQueue("runs")

        def write() -> None:
            for i in range(messages):
                put.put({"i": i, "body": payload})

        thread = threading.Thread(target=write)
        thread.start()
        while got < messages:
            try:
                message = take.get(timeout=10)
            except take.Empty:
                break
            except Exception as exc:  # half a message: not JSON
                errors.append(type(exc).__name__)
                got += 1
                continue
            if message.payload.get("body") != payload:
                errors.append("truncated")
            message.ack()
            got += 1
        thread.join()
    return errors


def test_a_reader_never_gets_half_a_message(tmp_path: Path) -> None:
    assert broker.SCHEME == "tcpfr-filesystem"
    assert _race(tmp_path, broker.SCHEME) == []


def test_a_folder_has_no_host_to_warn_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """kombu's virtual transports default to host 'localhost' and warn at each start that
    `tcpfr-filesystem://` names none; the file system transport has no host to default to.
    kombu's own file-system transport still warns, so the check can fail."""
    for scheme, warned in ((broker.SCHEME, False), ("filesystem", True)):
        caplog.clear()
        with (
            caplog.at_level("WARNING", logger="kombu.connection"),
            _connection(tmp_path / scheme, scheme) as conn,
        ):
            conn.info()
        assert ("No hostname was supplied" in caplog.text) is warned, scheme
