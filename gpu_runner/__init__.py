"""KernelHub's evaluator: checks and times one solution against one problem, on a runner host.

Runs without the Django site. Entry points: `python -m gpu_runner evaluate ...` and
`gpu_runner.evaluate.evaluate(...)`.
"""

# Bumped whenever a change can move a verdict or a time: it is part of every result and of the baseline cache key.
EVALUATOR_VERSION = "1.7.4"
