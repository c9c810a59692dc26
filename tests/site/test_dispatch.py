"""After commit, a submission is sent to its pool's queue as `gpu_runner.evaluate_job` with the contract's job."""

from apps.submissions.models import Evaluation, token_hash
from tests.site.conftest import SOLUTION_SOURCE, submit

JOB_KEYS = {"evaluation_id", "job_token", "attempt", "problem_slug", "problem_source", "solution_source",
            "language", "device", "seed"}


def test_a_submission_is_sent_to_its_pools_queue_after_commit(problem, alice, api, redis_queue,
                                                              django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        body = submit(api(alice.token)).json()
    messages = redis_queue("pool.cpu")
    assert len(messages) == 1
    assert messages[0]["task"] == "gpu_runner.evaluate_job"
    job = messages[0]["kwargs"]["job"]
    assert set(job) == JOB_KEYS
    assert job["evaluation_id"] == body["evaluation_id"] and job["attempt"] == 1
    assert job["problem_slug"] == "add-one-cpu" and job["problem_source"] == problem.source
    assert job["solution_source"] == SOLUTION_SOURCE and job["language"] == "cpp" and job["device"] == "cpu"
    evaluation = Evaluation.objects.get(pk=body["evaluation_id"])
    # The row keeps only the token's hash.
    assert evaluation.job_token_hash == token_hash(job["job_token"]) != job["job_token"]
    assert redis_queue("pool.h200") == []


def test_nothing_is_sent_when_the_transaction_rolls_back(problem, alice, redis_queue,
                                                         django_capture_on_commit_callbacks):
    from django.db import transaction

    from apps.submissions.services import submission_create

    class Abort(Exception):
        pass

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        try:
            with transaction.atomic():
                submission_create(entrant=alice.entrant, problem_slug="add-one-cpu", source=SOLUTION_SOURCE)
                raise Abort
        except Abort:
            pass
    assert callbacks == []
    assert redis_queue("pool.cpu") == []


def test_a_duplicate_is_not_sent_again(problem, alice, api, redis_queue, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        submit(api(alice.token))
        submit(api(alice.token))
    assert len(redis_queue("pool.cpu")) == 1


def test_two_dispatchers_of_the_same_attempt_send_one_job(problem, alice, api, redis_queue,
                                                          django_capture_on_commit_callbacks):
    from apps.submissions.lifecycle import evaluation_dispatch

    with django_capture_on_commit_callbacks(execute=True):
        body = submit(api(alice.token)).json()
    # The sweeper and a late on-commit callback both try attempt 0 -> 1: only the first sends.
    with django_capture_on_commit_callbacks(execute=True):
        assert evaluation_dispatch(evaluation_id=body["evaluation_id"], attempt=0) is False
    assert len(redis_queue("pool.cpu")) == 1


def test_a_gpu_pools_job_also_sends_a_build_hint_to_its_build_slots(problem, pools, alice, api, redis_queue,
                                                                   django_capture_on_commit_callbacks):
    from apps.submissions.problems import problem_load_from_file
    from tests.evaluator.helpers import FIXTURES
    from tests.site.conftest import PROBLEM_FILE

    cuda_source = (FIXTURES / "relu_scale_cuda.py").read_text()

    problem_load_from_file(path=PROBLEM_FILE, hardware=["cpu", "h200"])
    redis_queue.client.delete("pool.h200.build", "pool.cpu.build")
    with django_capture_on_commit_callbacks(execute=True):
        body = submit(api(alice.token), hardware="h200", source=cuda_source).json()
    [job] = [m["kwargs"]["job"] for m in redis_queue("pool.h200")]
    raw = redis_queue.client.lrange("pool.h200.build", 0, -1)
    [hint] = redis_queue("pool.h200.build")
    redis_queue.client.delete("pool.h200.build")
    assert hint["task"] == "gpu_runner.prebuild_job"
    # The sources and nothing that could claim or answer the job.
    assert hint["kwargs"]["job"] == {"evaluation_id": body["evaluation_id"], "problem_source": job["problem_source"],
                                     "solution_source": job["solution_source"], "device": "cuda"}
    assert job["job_token"] not in raw[0].decode()
    # A CPU pool's builds would share the cores its timing runs on: none there.
    with django_capture_on_commit_callbacks(execute=True):
        submit(api(alice.token), hardware="cpu", source=SOLUTION_SOURCE + "\n# again\n")
    assert redis_queue.client.llen("pool.cpu.build") == 0
