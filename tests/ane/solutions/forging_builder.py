"""A builder that writes the harness's result file itself, claiming another isolation, and leaves."""

import json
import os


def build(weights, input_shapes):
    with open("result.json", "w") as f:
        json.dump({"ok": False, "error": "forged", "isolation": {"landlock": "forged", "lockdown": "forged"}}, f)
    os._exit(0)
