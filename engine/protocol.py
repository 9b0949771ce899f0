"""The protocols' own numbers: header sizes and window limits, as the RFCs fix them.

Both the scenario language (its derived MSS, its warnings) and the simulator (each packet's
size) read them here; this module imports nothing.
"""

from __future__ import annotations

from typing import Final

IP_HEADER: Final = 20  # RFC 791, no options
TCP_HEADER: Final = 20  # RFC 9293, no options
UDP_HEADER: Final = 8  # RFC 768
TCP_IP_HEADERS: Final = IP_HEADER + TCP_HEADER
# RFC 7323 3.2: the timestamps option is 10 bytes; Linux sends it after two NOPs
# (TCPOLEN_TSTAMP_ALIGNED), 12 bytes on every segment once both ends agreed to it.
TIMESTAMPS_OPTION: Final = 12
UDP_IP_HEADERS: Final = IP_HEADER + UDP_HEADER
# RFC 7323: a window field is 16 bits; a negotiated shift of at most 14 scales it.
MAX_UNSCALED_WINDOW: Final = 65_535
MAX_WINDOW_SHIFT: Final = 14
MAX_SCALED_WINDOW: Final = MAX_UNSCALED_WINDOW << MAX_WINDOW_SHIFT
