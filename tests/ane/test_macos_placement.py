"""Placement shares from a compute plan: the part of the macOS backend that is pure logic."""

import pytest

from ane_runner.macos import PlacedOp, placement_shares


def test_it_computes_the_share_of_ops_and_of_cost_on_the_neural_engine():
    plan = [
        PlacedOp("const", None, None),  # weights: not counted
        PlacedOp("cast", "cpu", 0.02),
        PlacedOp("conv", "ane", 0.70),
        PlacedOp("relu", "ane", 0.08),
        PlacedOp("gather", "cpu", 0.20),
    ]
    shares = placement_shares(plan)
    assert shares["ops"] == 4
    assert shares["ops_by_device"] == {"ane": 2, "cpu": 2}
    assert shares["ane_op_share"] == pytest.approx(0.5)
    assert shares["ane_cost_share"] == pytest.approx(0.78)


def test_it_renormalises_cost_over_the_ops_that_reported_one():
    plan = [PlacedOp("conv", "ane", 0.3), PlacedOp("softmax", "gpu", 0.1), PlacedOp("relu", "ane", None)]
    shares = placement_shares(plan)
    assert shares["ane_cost_share"] == pytest.approx(0.75)
    assert shares["ane_op_share"] == pytest.approx(2 / 3)


def test_it_says_unknown_rather_than_zero_when_core_ml_could_not_tell():
    shares = placement_shares([PlacedOp("conv", None, None)])
    assert shares["ops_by_device"] == {"unknown": 1}
    assert shares["ane_op_share"] == 0.0
    assert shares["ane_cost_share"] is None
    assert placement_shares([])["ane_op_share"] is None
