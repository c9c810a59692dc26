from tests.pages.fixtures import (  # noqa: F401  (fixtures)
    alice,
    alice_agent,
    alice_submission,
    bob,
    cpu_pool,
    gpu_pool,
    problem,
    sam,
)
