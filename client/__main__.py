"""`python -m client`: the same as the `tcpfr` command."""

import sys

from client.cli import main

sys.exit(main())
