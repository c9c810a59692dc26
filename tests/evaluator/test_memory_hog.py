import uuid

import pytest

from gpu_runner import memory_plan
from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import HONEST, PROBLEM, with_forward


def test_it_gives_runtime_error_for_a_memory_hog(monkeypatch):
    monkeypatch.setenv("KERNELHUB_CHILD_MEMORY_GB", "3")
    solution = with_forward("""
        hoard = []
        while True:
            hoard.append(torch.ones(256 << 20, dtype=torch.uint8))
    """, prelude="import torch\n")
    result = evaluate(PROBLEM, solution, device="cpu")
    assert result["verdict"] == "runtime_error"
    assert "memory" in result["message"].lower() or "alloc" in result["message"].lower(), result["message"]


@pytest.mark.skipif((memory_plan.host_total() or 0) < 16 << 30, reason="the ceiling (the host's memory) must be well "
                    "above the 12 GiB the solution asks for")
def test_the_plan_sets_the_solutions_limit_and_the_solution_cannot_raise_it(monkeypatch):
    """With KERNELHUB_CHILD_MEMORY_GB unset, every CPU child starts at the host's memory and the solution's harness
    lowers its own limit at its load to the plan's figure: for this small problem the floor, 8 GiB. A solution
    that tries to raise it again and then asks for 12 GiB (address space only, never touched: under the ceiling,
    over the floor) is refused the allocation: the kernel holds the limit whatever gets past the static screen."""
    monkeypatch.delenv("KERNELHUB_CHILD_MEMORY_GB", raising=False)
    solution = with_forward("""
        resource = __builtins__["__import__"]("reso" + "urce") if isinstance(__builtins__, dict) \
            else __builtins__.__import__("reso" + "urce")  # past the static screen, which refuses `import resource`
        try:
            resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        except (OSError, ValueError):
            pass
        try:
            resource.setrlimit(resource.RLIMIT_AS, (resource.getrlimit(resource.RLIMIT_AS)[1],) * 2)
        except (OSError, ValueError):
            pass
        torch.empty(12 << 30, dtype=torch.uint8)
    """, prelude="import torch\n")
    result = evaluate(PROBLEM, solution, device="cpu")
    assert result["verdict"] == "runtime_error", result["message"]
    assert "memory" in result["message"].lower() or "alloc" in result["message"].lower(), result["message"]
    assert result["isolation"]["observed"]["address_space_bytes"] == 8 << 30, result["isolation"]
    assert result["isolation"]["rlimits"]["address_space_bytes"] == 8 << 30, result["isolation"]
    assert result["isolation"]["rlimits"]["address_space_at_start_bytes"] > 12 << 30, result["isolation"]
    assert result["checks"]["memory_plan"]["solution_address_space"]["bytes"] == 8 << 30


def test_a_first_evaluation_sets_the_solutions_limit_after_the_measured_footprint(monkeypatch):
    """The shapes show no temporaries: on a problem's first evaluation the solution's load waits for the reference's
    first trial, and its limit comes from the measured footprint where that needs more; the next evaluation plans
    from the cached footprint at once."""
    monkeypatch.delenv("KERNELHUB_CHILD_MEMORY_GB", raising=False)
    with_temporaries = PROBLEM.replace("return torch.relu(x) * self.scale",
                                       "t = x.repeat(64, 1)  # 32 MiB beside a 0.5 MiB input\n"
                                       "        del t\n"
                                       "        return torch.relu(x) * self.scale")
    assert with_temporaries != PROBLEM
    problem = with_temporaries + f"\n# a problem of its own (no footprint cached): {uuid.uuid4()}\n"
    first = evaluate(problem, HONEST, device="cpu")
    assert first["verdict"] == "accepted", first["message"]
    plan = first["checks"]["memory_plan"]
    assert plan["before_trials"]["footprint"]["source"] == "meta" and "wait_for_footprint" in first["stage_seconds"]
    limit = plan["solution_address_space"]
    assert limit["measured_needs"] > plan["before_trials"]["needs"]["solution_child"] + (16 << 20), plan
    assert limit["bytes"] == max(8 << 30, int(1.5 * limit["measured_needs"])), limit
    second = evaluate(problem, HONEST, device="cpu")
    assert second["verdict"] == "accepted", second["message"]
    assert "wait_for_footprint" not in second["stage_seconds"]
    assert second["checks"]["memory_plan"]["solution_address_space"]["from"] == "cached"


def test_each_child_starts_with_the_limit_of_its_track_and_role(monkeypatch):
    """A GPU child has no address-space limit (the driver maps huge ranges); a build slot's child (no GPU) has twice
    the setting, trusted ones 1.5x that again; on the CPU track with the setting unset every child starts at the
    host's memory (the solution lowers its own at its load), with it set the solution has it and trusted ones 1.5x."""
    from gpu_runner import config
    from gpu_runner.session import (
        BUILD_SLOT_MEMORY_FACTOR,
        TRUSTED_MEMORY_FACTOR,
        address_space_ceiling,
        limits,
    )

    monkeypatch.delenv("KERNELHUB_CHILD_MEMORY_GB", raising=False)
    unset = config.RunnerConfig.from_env()
    floor = unset.child_memory_bytes()
    assert limits("cuda", "solution", settings=unset).memory_bytes is None
    assert limits("cuda", "eager", settings=unset).memory_bytes is None
    assert limits("cuda", "solution", gpu=False, settings=unset).memory_bytes == int(floor * BUILD_SLOT_MEMORY_FACTOR)
    assert limits("cuda", "eager", gpu=False, settings=unset).memory_bytes == int(
        int(floor * BUILD_SLOT_MEMORY_FACTOR) * TRUSTED_MEMORY_FACTOR)
    ceiling = address_space_ceiling(unset)
    assert ceiling >= int(floor * TRUSTED_MEMORY_FACTOR)
    for role in ("solution", "eager", "compile"):
        lim = limits("cpu", role, settings=unset)
        assert lim.memory_bytes == ceiling and lim.gpu is False, (role, lim)

    monkeypatch.setenv("KERNELHUB_CHILD_MEMORY_GB", "3")
    fixed = config.RunnerConfig.from_env()
    assert limits("cpu", "solution", settings=fixed).memory_bytes == 3 << 30
    assert limits("cpu", "eager", settings=fixed).memory_bytes == int((3 << 30) * TRUSTED_MEMORY_FACTOR)
