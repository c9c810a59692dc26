"""Fixture sources shared by the evaluator tests."""

import textwrap
from pathlib import Path

import psutil

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROBLEM = (FIXTURES / "relu_scale.py").read_text()
TINY_PROBLEM = (FIXTURES / "relu_tiny_scale.py").read_text()
HONEST = (FIXTURES / "relu_scale_cpp.py").read_text()


def with_forward(body: str, prelude: str = "", base: str = HONEST) -> str:
    """The honest solution with ModelNew redefined: same extension, so the build is shared and cached."""
    return (
        base
        + "\n"
        + textwrap.dedent(prelude)
        + "\n\nclass ModelNew(nn.Module):\n    def __init__(self, scale):\n        super().__init__()\n"
        + "        self.scale = scale\n\n    def forward(self, x):\n"
        + textwrap.indent(textwrap.dedent(body).strip(), "        ")
        + "\n"
    )


def processes_with(text: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if text in " ".join(p.info["cmdline"] or []) and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except psutil.Error:
            pass
    return found
