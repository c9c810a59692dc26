"""A solution that never reaches a Mac still gets a verdict in the evaluator's result shape."""

from ane_runner.jobs import ineligible_result


def _report(*issues):
    return {"eligible": False, "issues": [{"op": op, "rule": rule, "detail": detail} for op, rule, detail in issues]}


def test_it_is_a_compile_error_when_no_model_could_be_built():
    result = ineligible_result(_report((None, "build", "the solution's build() raised: ValueError")))
    assert result["verdict"] == "compile_error" and result["correct"] is None
    assert "[build] the solution's build() raised: ValueError" in result["message"]


def test_it_is_rejected_when_the_model_breaks_the_rules():
    result = ineligible_result(_report(("gather", "unsupported_op", "`gather` does not run"),
                                       ("conv", "fp16_compute", "`y` is computed in float32")))
    assert result["verdict"] == "rejected" and result["runtime_us"] is None
    assert result["message"].splitlines()[1:] == ["[unsupported_op] gather: `gather` does not run",
                                                  "[fp16_compute] conv: `y` is computed in float32"]
    assert result["validation"]["issues"][0]["op"] == "gather"
