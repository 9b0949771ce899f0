"""The embedded mode's broker: kombu's file-system transport, with messages that appear
whole. kombu writes a message straight into the queue folder, and a worker polling the
folder can take the file before its last byte is written (a JSONDecodeError that stopped
the worker, and with it `make run`); here a message is written beside the folder and
renamed into it, which the file system does at once.

Registered as the kombu transport ``tcpfr-filesystem`` when this module is imported;
``messaging`` imports it, so the API and the workers both know it.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic
from typing import Any

from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

SCHEME = "tcpfr-filesystem"


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Put a message on `queue`: written in the staging folder, renamed into the queue."""
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        staging = os.path.join(os.path.dirname(self.data_folder_out.rstrip(os.sep)), "staging")
        os.makedirs(staging, exist_ok=True)
        path = os.path.join(staging, name)
        try:
            with open(path, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.rename(path, os.path.join(self.data_folder_out, name))
        except OSError as exc:
            raise filesystem.ChannelError(f"Cannot add file {name!r} to the queue") from exc


class Transport(filesystem.Transport):
    Channel = Channel

    @property
    def default_connection_params(self) -> dict[str, Any]:
        """None: a folder has no host or port. kombu's virtual transports default to
        'localhost', and a connection whose URL names no host (ours, `tcpfr-filesystem://`)
        then warns at every start that it reverts to it."""
        return {}


TRANSPORT_ALIASES[SCHEME] = f"{__name__}:Transport"
