"""Loaded by pytest before Django's settings (an entry point of this package).

Each test run gets its own var/ directory, so its SQLite files and embedded Redis socket never collide with
`make run` or with another test run on the same machine.
"""

import os
import tempfile

if not os.environ.get("KERNELHUB_VAR_DIR"):
    os.environ["KERNELHUB_VAR_DIR"] = tempfile.mkdtemp(prefix="kernelhub-test-")
