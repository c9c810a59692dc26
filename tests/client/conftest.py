"""A live site for the client: the `cpu` pool, the bundled problem gelu-erf-cpu, an entrant with its token.

Tests that follow a submission to its verdict also ask for `runner_process` (tests/live.py): a real cpu runner,
`python -m gpu_runner serve`, whose Celery worker takes the job from pool.cpu and runs the real evaluator. The
solutions below are the honest C++ example of the problem and variants of it that fail in one known way; the
wrong answer reuses the example's extension, so the C++ build cache serves it after the first build.
"""

import pytest

from tests.conftest import REPO_ROOT
from tests.live import live_asgi_process, live_asgi_server, runner_process  # noqa: F401
from tests.site.conftest import redis_queue  # noqa: F401 - empties pool.cpu before and after each test

PROBLEM_FILE = REPO_ROOT / "problems" / "cpu" / "level1" / "gelu_erf_cpu.py"
EXAMPLE_FILE = REPO_ROOT / "examples" / "cpu" / "cpp" / "gelu_erf_cpu.py"
EXAMPLE = EXAMPLE_FILE.read_text()
# A cold build of the example, the baselines and the timing on a loaded 2-core machine: minutes.
EVALUATION_TIMEOUT_S = 900


def _variant_of_example(old: str, new: str) -> str:
    assert EXAMPLE.count(old) == 1, f"{EXAMPLE_FILE} changed: update the client tests' variant of {old!r}"
    return EXAMPLE.replace(old, new)


# GELU applied twice: the same C++ extension (a cache hit), a real wrong answer.
WRONG_ANSWER = _variant_of_example("return _ext.gelu_erf(x.contiguous())",
                                   "return _ext.gelu_erf(_ext.gelu_erf(x.contiguous()))")
# A missing semicolon in the C++ source (and its own extension name): the compiler refuses it.
COMPILE_ERROR = _variant_of_example("const float v = in[i];", "const float v = in[i]").replace(
    'name="kh_gelu_erf_cpu"', 'name="kh_gelu_erf_cpu_broken"')
# The example's extension (a cache hit) called on float64: its own check stops the forward pass.
RUNTIME_ERROR = _variant_of_example("return _ext.gelu_erf(x.contiguous())",
                                    "return _ext.gelu_erf(x.contiguous().double())")
# No custom kernel at all: the runner's pre-screen rejects it before building anything.
REJECTED = '''import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def forward(self, x):
        return F.gelu(x)
'''


def solution(variant: int) -> str:
    """A distinct source per variant (the site deduplicates equal ones), for tests that need no verdict."""
    return EXAMPLE + f"\n# variant {variant}\n"


@pytest.fixture
def site(live_asgi_server, redis_queue):  # noqa: F811 - the fixtures imported above
    from apps.devices.services import pool_get_or_create
    from apps.submissions.problems import problem_load_from_file
    from apps.submissions.services import entrant_create

    pool_get_or_create(slug="cpu")
    problem, _ = problem_load_from_file(path=PROBLEM_FILE, hardware=["cpu"])
    entrant, token = entrant_create(name="Client Agent", kind="agent")
    return {"url": live_asgi_server, "token": token, "problem": problem.slug, "entrant": entrant}
