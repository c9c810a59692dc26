"""The harness's work around a timed call costs the same in every child (gpu_runner/heap.py), and the
parent reads the children's CPU time exactly (sandbox.child_env's OpenMP settings).

The clock audit subtracts the trusted null call's cost from each of the solution's requests; whatever the
solution's child pays beyond it is counted as the solution's own time. A solution's child keeps a batch's outputs
for the checks, and with glibc's default heap it page-faulted its poison block and its output in full on every
timed call: before this fix (2026-11-30) an honest OpenMP softmax with a 16 MiB output faulted about 12,500
pages per audited call against none in the null call, and was rejected as `timing_forged` in 2 of 3 runs on an
idle 2-core machine.
"""

import pytest

from tests.exploits.corpus import REPO_ROOT, evaluate_files

PAGES_PER_OUTPUT = (16 << 20) // 4096  # softmax_rows_cpu's output: 4096 x 1024 float32


@pytest.mark.slow
def test_an_honest_kernel_with_a_large_output_does_not_fault_in_its_timed_calls():
    result = evaluate_files(REPO_ROOT / "examples/cpu/cpp/softmax_rows_cpu.py",
                            REPO_ROOT / "problems/cpu/level1/softmax_rows_cpu.py",
                            env={"KERNELHUB_AUDIT_SAMPLES": "1"})
    checks = result.get("checks") or {}
    audit = checks.get("clock_audit")
    assert audit, f"no clock audit was recorded: {result.get('verdict')} {result.get('message')}"
    # Asked for, the raw figures of every audited call, with the trusted null call's own phases.
    samples = audit.get("samples") or []
    assert len(samples) == audit["calls"], audit
    assert all(s["null_phases_us"]["poison"] > 0 and s["request_wall_us"] > 0 for s in samples), samples[:3]
    faults = audit["page_faults_median"]
    assert faults["solution"] is not None and faults["null_call"] is not None, audit
    # Before the fix: about 3 x PAGES_PER_OUTPUT per call in the solution's child (its poison block of two
    # outputs, then its output), 0 in the null call.
    assert faults["solution"] < PAGES_PER_OUTPUT // 16, audit
    assert faults["null_call"] < PAGES_PER_OUTPUT // 16, audit
    assert (checks.get("heap_reserved_bytes") or 0) >= 4 * PAGES_PER_OUTPUT * 4096, checks.get("heap_reserved_bytes")
    assert result["verdict"] == "accepted", f"{result.get('rule')}: {result.get('message')}; audit {audit}"
    # And the audit's reading of the kernel's own time is close to the kernel's time: 0.94-0.99x on the idle
    # 2-core machine. With OpenMP threads spinning for milliseconds (their CPU time read a scheduler tick at a
    # time) it was 1.2-1.7x even without the faults, and about 2x with them; the audit rejects past 1.43x.
    assert audit["parent_clock_median_us"] <= 1.4 * audit["reported_median_us"], audit
