"""Reading ANE power from powermetrics' text output, and TFLOPS per watt only when power is known."""

import pytest

from ane_runner.macos import parse_powermetrics, tflops_per_watt

# The shape of `powermetrics --samplers cpu_power` output on Apple silicon (two samples, values made up here).
SAMPLE = """\
*** Sampled system activity (Sun Nov 29 22:00:00 2026 +0000) (102.31ms elapsed) ***

**** Processor usage ****

E-Cluster HW active frequency: 1020 MHz
P-Cluster HW active frequency: 3504 MHz

CPU Power: 1834 mW
GPU Power: 12 mW
ANE Power: 2410 mW
Combined Power (CPU + GPU + ANE): 4256 mW

*** Sampled system activity (Sun Nov 29 22:00:00 2026 +0000) (100.87ms elapsed) ***

CPU Power: 1790 mW
GPU Power: 9 mW
ANE Power: 2590.5 mW
Combined Power (CPU + GPU + ANE): 4389 mW
"""


def test_it_reads_every_sample_of_each_unit():
    samples = parse_powermetrics(SAMPLE)
    assert samples["ANE"] == [2410.0, 2590.5]
    assert samples["CPU"] == [1834.0, 1790.0]
    assert samples["GPU"] == [12.0, 9.0]


def test_it_does_not_take_the_combined_line_for_a_unit():
    assert parse_powermetrics("Combined Power (CPU + GPU + ANE): 4389 mW\n") == {"ANE": [], "CPU": [], "GPU": []}


def test_it_finds_nothing_in_a_refusal():
    assert parse_powermetrics("powermetrics must be invoked as the superuser\n")["ANE"] == []


def test_it_reports_tflops_per_watt_only_with_a_power_reading():
    # 2e12 FLOP in 1 s is 2 TFLOPS; at 2.5 W that is 0.8 TFLOPS/W
    assert tflops_per_watt(2 * 10**12, 1e6, 2.5) == pytest.approx(0.8)
    assert tflops_per_watt(2 * 10**12, 1e6, None) is None
    assert tflops_per_watt(2 * 10**12, 1e6, 0.0) is None
