"""gpu_runner/contract.py: the job and the result between site and runners, read back exactly, and refused
with a message that names the field when they are wrong."""

import json
import logging
import math

import pytest

from gpu_runner.contract import RUNNER_STAGES, STAGES, VERDICTS, ContractError, Job, Result
from gpu_runner.site_client import SiteClient
from gpu_runner.worker import run_job

# The job as apps/submissions/services.py evaluation_dispatch builds it (tests/site/test_dispatch.py reads the
# real message off the broker; tests/site/test_dispatch_contract.py checks that message against Job).
JOB = {"evaluation_id": 41, "job_token": "k3y-Only-in-the-message", "attempt": 1, "problem_slug": "add-one-cpu",
       "problem_source": "import torch\n", "solution_source": "class ModelNew: pass\n", "language": "cpp",
       "device": "cpu", "seed": 2**31 - 1}

# The evaluator's object (docs/EVALUATOR.md), with the parts only stored as is.
RESULT = {"verdict": "accepted", "correct": True, "runtime_us": 12.5, "eager_us": 25.0, "compile_us": None,
          "speedup_vs_eager": 2.0, "speedup_vs_compile": None, "message": "", "rule": None,
          "stats": {"n": 50, "median_us": 12.5, "ci95_us": [12.1, 12.9]}, "baselines": {"eager": None},
          "device": {"kind": "cpu"}, "checks": {"trials": 5, "prescreen": []}, "seed": 7, "wall_s": 3.2,
          "stage_seconds": {"prescreen": 0.01}}


def test_it_reads_back_a_job_exactly():
    job = Job.from_json(json.loads(json.dumps(JOB)))
    assert job.evaluation_id == 41 and job.seed == 2**31 - 1 and job.ane is None
    assert job.to_json() == JOB
    assert Job.from_json(job.to_json()) == job


def test_it_reads_back_an_ane_job_with_its_package():
    ane_job = {**JOB, "language": "coreml", "device": "ane", "ane": {"package_b64": "UEsDBA==", "input_sets": 2}}
    job = Job.from_json(ane_job)
    assert job.ane == {"package_b64": "UEsDBA==", "input_sets": 2}
    assert job.to_json() == ane_job


def test_it_ignores_keys_a_newer_site_adds():
    assert Job.from_json({**JOB, "priority": 3}).to_json() == JOB


@pytest.mark.parametrize("change, message", [
    ({"evaluation_id": "41"}, "job.evaluation_id must be an integer, not str"),
    ({"evaluation_id": 0}, "job.evaluation_id must be 1 or more, not 0"),
    ({"attempt": True}, "job.attempt must be an integer, not bool"),
    ({"seed": -1}, "job.seed must be 0 or more, not -1"),
    ({"seed": 1.5}, "job.seed must be an integer, not float"),
    ({"job_token": ""}, "job.job_token must not be empty"),
    ({"solution_source": None}, "job.solution_source must be a string, not null"),
    ({"device": "rocm"}, "job.device must be one of cpu, cuda, ane, not 'rocm'"),
    ({"language": "fortran"}, "job.language must be one of cpp, cuda, triton, cupy, coreml, not 'fortran'"),
    ({"ane": "base64:..."}, "job.ane must be a JSON object, not str"),
])
def test_it_refuses_a_job_with_a_wrong_field(change, message):
    with pytest.raises(ContractError) as refused:
        Job.from_json({**JOB, **change})
    assert str(refused.value).startswith(message), str(refused.value)


def test_it_names_every_missing_key():
    partial = {k: v for k, v in JOB.items() if k not in ("seed", "device")}
    with pytest.raises(ContractError, match=r"^job lacks device, seed: it was not made by a KernelHub site"):
        Job.from_json(partial)
    with pytest.raises(ContractError, match=r"^job must be a JSON object, not list"):
        Job.from_json([JOB])


def test_the_runner_drops_a_malformed_job_before_calling_the_site(caplog):
    # Port 9 (discard): nothing answers there, so any call to the site would raise instead of returning.
    client = SiteClient("http://127.0.0.1:9", "no-secret")
    with caplog.at_level(logging.ERROR, logger="gpu_runner.worker"):
        outcome = run_job(client, {**JOB, "evaluation_id": "41"})
    client.close()
    assert outcome == "refused"
    assert "Dropping a malformed job: job.evaluation_id must be an integer, not str" in caplog.text


def test_it_reads_back_a_result_exactly():
    result = Result.from_json(json.loads(json.dumps(RESULT)))
    assert (result.verdict, result.correct, result.runtime_us, result.compile_us) == ("accepted", True, 12.5, None)
    assert result.details["stats"]["ci95_us"] == [12.1, 12.9]
    assert result.to_json() == RESULT
    assert Result.from_json(result.to_json()) == result


def test_it_keeps_whatever_else_the_result_carries():
    # An ANE result adds its own figures; a timeout from the worker has only the headline fields.
    ane = {**RESULT, "speedup_vs_coreml": 1.3, "placement": {"ane": 0.97}, "details": ["kept too"]}
    assert Result.from_json(ane).to_json() == ane
    timeout = {"verdict": "timeout", "correct": False, "message": "took longer than 1800 s"}
    assert Result.from_json(timeout).to_json() == {**timeout, "runtime_us": None, "eager_us": None,
                                                   "compile_us": None, "speedup_vs_eager": None,
                                                   "speedup_vs_compile": None, "rule": None}


@pytest.mark.parametrize("change, message", [
    ({"verdict": "passed"}, "result.verdict must be one of accepted, wrong_answer, compile_error, runtime_error, "
                            "timeout, rejected, not 'passed'"),
    ({"correct": "yes"}, "result.correct must be true, false or null, not str"),
    ({"correct": False}, "result.correct must be true for an accepted verdict, not False"),
    ({"runtime_us": "12.5"}, "result.runtime_us must be a number or null, not str"),
    ({"eager_us": math.inf}, "result.eager_us must be finite or null, not inf"),
    ({"speedup_vs_eager": True}, "result.speedup_vs_eager must be a number or null, not bool"),
    ({"message": 3}, "result.message must be a string, not int"),
    ({"verdict": "rejected", "rule": ""}, "result.rule must not be empty"),
])
def test_it_refuses_a_result_with_a_wrong_field(change, message):
    with pytest.raises(ContractError) as refused:
        Result.from_json({**RESULT, **change})
    assert str(refused.value).startswith(message), str(refused.value)


def test_it_refuses_a_result_without_a_verdict():
    with pytest.raises(ContractError, match=r"^result lacks verdict \(one of accepted, wrong_answer"):
        Result.from_json({k: v for k, v in RESULT.items() if k != "verdict"})
    with pytest.raises(ContractError, match=r"^result must be a JSON object, not str"):
        Result.from_json("accepted")


def test_the_stages_run_in_order_and_runners_report_the_middle_ones():
    assert STAGES == ("queued", "prescreen", "compiling", "checking", "timing", "done")
    assert RUNNER_STAGES == ("prescreen", "compiling", "checking", "timing")
    assert VERDICTS == ("accepted", "wrong_answer", "compile_error", "runtime_error", "timeout", "rejected")
