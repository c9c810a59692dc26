"""Load for benchmarks/site_latency.py: the problem page, the submission page and POST /api/v1/submissions/.

Each locust user is one client that waits for its answer, then "thinks" for a random time drawn uniformly from
KH_BENCH_THINK_S="LOW,HIGH" seconds (site_latency.py --think-s) before its next request. "0,0" is a closed loop
that never pauses: 50 such users saturate the machine and measure its throughput ceiling and queueing, not the
latency 50 agents or people see. "0.5,1.5" (a mean of 1 s) is 50 clients that each read a page or poll a
submission about once a second.
"""

import json
import os
import random
import uuid

from locust import HttpUser, between, task

SEED = json.loads(os.environ["KH_BENCH_SEED"])
THINK_LOW_S, THINK_HIGH_S = (float(x) for x in os.environ.get("KH_BENCH_THINK_S", "0,0").split(","))


class Visitor(HttpUser):
    wait_time = between(THINK_LOW_S, THINK_HIGH_S)

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
