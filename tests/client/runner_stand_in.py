"""The runner's side of one job, played by the test: take the job from the pool's real queue, then report
stages and a chosen result over the site's real runner API. It stands in for gpu_runner (which needs minutes
to build and time a kernel), not for anything of the site."""

import threading
import time

import httpx


def take_job(queue: str, timeout: float = 20.0) -> dict:
    """The `job` kwarg of the next gpu_runner.evaluate_job message on `queue` (Celery protocol 2)."""
    from kernelhub.celery import app

    with app.connection_for_read() as conn:
        simple = conn.SimpleQueue(queue)
        try:
            message = simple.get(block=True, timeout=timeout)
            _args, kwargs, _embed = message.decode()
            message.ack()
        finally:
            simple.close()
    return kwargs["job"]


def purge(queue: str) -> None:
    """Drops jobs left in the queue by earlier tests (their rows are gone with the test database's flush)."""
    from kernelhub.celery import app

    with app.connection_for_read() as conn:
        simple = conn.SimpleQueue(queue)
        simple.clear()
        simple.close()


def play_job(*, site_url: str, runner_secret: str, result: dict, stage_pause: float = 2.0,
             queue: str = "pool.cpu") -> threading.Thread:
    """Starts a thread that takes the next job and walks it through the stages to `result`."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            job = take_job(queue)
            headers = {"Authorization": f"Runner {runner_secret}", "X-Job-Token": job["job_token"]}
            base = f"{site_url}/api/v1/jobs/{job['evaluation_id']}"
            with httpx.Client(headers=headers, timeout=10) as http:
                http.post(f"{base}/claim/").raise_for_status()
                for stage in ("compiling", "checking", "timing"):
                    time.sleep(stage_pause)
                    http.post(f"{base}/stage/", json={"stage": stage}).raise_for_status()
                time.sleep(stage_pause)
                http.post(f"{base}/result/", json={"result": result}).raise_for_status()
        except BaseException as exc:  # noqa: BLE001 - handed to the test, which fails with it
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.errors = errors  # type: ignore[attr-defined]
    thread.start()
    return thread
