"""A runner's settings (gpu_runner/config.py): one table, read once, checked at once, passed down."""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path

import pytest

from gpu_runner import config
from gpu_runner.config import ConfigError, RunnerConfig

REPO = Path(__file__).resolve().parents[2]
RUNNER_SOURCES = sorted([*(REPO / "gpu_runner").glob("*.py"), *(REPO / "ane_runner").glob("*.py")])


def test_the_table_and_the_settings_value_agree():
    assert set(config.SETTINGS) == {f.name for f in fields(RunnerConfig)}
    # Nothing set: every default of the table is the dataclass's own.
    assert RunnerConfig.from_env({}) == RunnerConfig()
    assert RunnerConfig.from_env({"KERNELHUB_TRIALS": "  "}) == RunnerConfig()  # blank is unset


def test_values_are_parsed_into_their_types():
    got = RunnerConfig.from_env({"KERNELHUB_TRIALS": "7", "KERNELHUB_TIMING_BUDGET_S": "2.5",
                                 "KERNELHUB_PRESTART": "no", "KERNELHUB_OUTPUT_IPC": "Capability",
                                 "KERNELHUB_CACHE_DIR": "/tmp/kh-cache", "KERNELHUB_BUILD_SLOTS": "0"})
    assert got.trials == 7 and got.prestart is False and got.output_ipc == "capability"
    assert got.timing_budget("cuda") == got.timing_budget("cpu") == 2.5
    assert got.cache_path() == Path("/tmp/kh-cache") and got.build_slot_count() == 0
    assert RunnerConfig().timing_budget("cuda") == 10.0 and RunnerConfig().timing_budget("cpu") == 3.0
    assert RunnerConfig(soft_time_limit_s=100).hard_time_limit_s() == 120


@pytest.mark.parametrize("var,raw,says", [
    ("KERNELHUB_TRIALS", "many", "an integer of 1 or more is expected"),
    ("KERNELHUB_TRIALS", "0", "an integer of 1 or more is expected"),
    ("KERNELHUB_STEP_TIMEOUT_S", "-5", "a positive number is expected"),
    ("KERNELHUB_STEP_TIMEOUT_S", "nan", "a finite number is expected"),
    ("KERNELHUB_GPU_LOCK_TIMEOUT_S", "soon", "a number is expected"),
    ("KERNELHUB_PRESTART", "maybe", "use true or false"),
    ("KERNELHUB_OUTPUT_IPC", "fast", "use 0 .* 1 .* or capability"),
    ("KERNELHUB_BUILD_SLOTS", "-1", r"an integer of 0 or more is expected \(0: no build slots"),
    ("KERNELHUB_HEAD_START_MAX_US", "-1", "a number of at least 0 is expected"),
])
def test_a_bad_value_is_refused_naming_the_variable_and_what_to_write(var, raw, says):
    with pytest.raises(ConfigError, match=f"^{var}={raw!r}: {says}"):
        RunnerConfig.from_env({var: raw})


def test_the_runners_secret_never_reaches_a_log():
    text = repr(RunnerConfig.from_env({"KERNELHUB_RUNNER_TOKEN": "s3cret-token"}))
    assert "s3cret-token" not in text and "runner_token='***'" in text


def _env_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, variable) of every os.environ.get / os.environ[...] / os.getenv / environ.setdefault of a literal."""
    found = []
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            f = ast.unparse(node.func)
            if f in ("os.environ.get", "os.getenv", "os.environ.setdefault", "environ.get"):
                name = node.args[0].value
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ" \
                and isinstance(node.slice, ast.Constant):
            name = node.slice.value
        if isinstance(name, str) and name.startswith("KERNELHUB_"):
            found.append((node.lineno, name))
    return found


def test_no_runner_module_reads_a_setting_for_itself():
    """Only config.py reads the settings; elsewhere only the evaluator's own variables for its children."""
    stray = [f"{path.relative_to(REPO)}:{line} reads {name}"
             for path in RUNNER_SOURCES if path.name != "config.py"
             for line, name in _env_reads(ast.parse(path.read_text()))
             if name not in config.INTERNAL_VARS]
    assert not stray, "read these through gpu_runner.config:\n" + "\n".join(stray)


def test_every_variable_the_runner_code_names_is_a_setting_or_its_own():
    known = {s.var for s in config.SETTINGS.values()} | config.INTERNAL_VARS
    named = {(path.relative_to(REPO), m) for path in RUNNER_SOURCES
             for m in re.findall(r"KERNELHUB_[A-Z0-9_]*[A-Z0-9]", path.read_text())}
    unknown = sorted(f"{p}: {m}" for p, m in named if m not in known)
    assert not unknown, "named but not a setting (stale, or missing from config.SETTINGS):\n" + "\n".join(unknown)


def test_the_docs_table_is_the_code_s():
    assert config.markdown_table() in (REPO / "docs" / "EVALUATOR.md").read_text(), \
        "docs/EVALUATOR.md's Configuration table differs: paste `python -m gpu_runner.config --markdown`"


def test_an_evaluation_is_refused_a_bad_setting_and_uses_the_settings_it_is_given(monkeypatch):
    from dataclasses import replace

    from gpu_runner.evaluate import evaluate
    from tests.evaluator.helpers import HONEST, PROBLEM

    good = RunnerConfig.from_env()
    # Unusable values that any module reading them for itself would trip over.
    monkeypatch.setenv("KERNELHUB_TRIALS", "many")
    monkeypatch.setenv("KERNELHUB_STEP_TIMEOUT_S", "soon")
    monkeypatch.setenv("KERNELHUB_TIMING_BUDGET_S", "later")
    with pytest.raises(ConfigError, match="KERNELHUB_TRIALS='many'"):
        evaluate(PROBLEM, HONEST, device="cpu")  # read from the environment: refused before anything starts
    result = evaluate(PROBLEM, HONEST, device="cpu", settings=replace(good, trials=6, timing_budget_s=1.0))
    assert result["verdict"] == "accepted", result["message"]
    assert result["checks"]["trials"] == 6
