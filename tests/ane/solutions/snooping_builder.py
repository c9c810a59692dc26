"""A builder that tries to leave its sandbox; it reports what it got in its error message."""

import json
import os
import socket

TARGETS = {"read": {}, "write": {}}  # the test puts real paths here


def build(weights, input_shapes):
    seen = {"env_secret": os.environ.get("KERNELHUB_TEST_SECRET"), "env_keys": sorted(os.environ)}
    for key, path in TARGETS["read"].items():
        try:
            with open(path) as f:
                seen[key] = f.read()
        except OSError as e:
            seen[key] = f"denied: {e.strerror}"
    for key, path in TARGETS["write"].items():
        try:
            with open(path, "w") as f:
                f.write("pwned")
            seen[key] = "written"
        except OSError as e:
            seen[key] = f"denied: {e.strerror}"
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=2).close()
        seen["tcp"] = "connected"
    except OSError as e:
        seen["tcp"] = f"denied: {e.strerror or e}"
    raise RuntimeError("SEEN " + json.dumps(seen))
