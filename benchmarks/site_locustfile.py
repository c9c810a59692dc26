"""Load for benchmarks/site_latency.py: the problem page, the submission page and POST /api/v1/submissions/."""

import json
import os
import random
import uuid

from locust import HttpUser, between, task

SEED = json.loads(os.environ["KH_BENCH_SEED"])


class Visitor(HttpUser):
    wait_time = between(0.0, 0.1)

    @task(4)
    def problem_page(self) -> None:
        self.client.get(f"/problems/{random.choice(SEED['problems'])}/", name="GET /problems/<slug>/")

    @task(4)
    def submission_page(self) -> None:
        self.client.get(f"/submissions/{random.randint(SEED['first_submission'], SEED['last_submission'])}/",
                        name="GET /submissions/<id>/")

    @task(2)
    def submit(self) -> None:
        source = SEED["source"].replace("__UNIQUE__", uuid.uuid4().hex)
        self.client.post("/api/v1/submissions/", name="POST /api/v1/submissions/",
                         json={"problem": random.choice(SEED["problems"]), "source": source, "hardware": "cpu"},
                         headers={"Authorization": f"Token {random.choice(SEED['tokens'])}"})
