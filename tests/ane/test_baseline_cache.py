"""The Mac caches baseline timings per baseline package, chip, macOS and coremltools: the file logic, run here."""

from ane_runner.evaluate_mac import baseline_cache_key, baseline_cache_load, baseline_cache_store


def test_it_keys_on_the_package_the_chip_and_the_core_ml_stack():
    base = baseline_cache_key(b"zip-a", chip="m4-ane", macos="15.1", coremltools="9.0")
    assert base == baseline_cache_key(b"zip-a", chip="m4-ane", macos="15.1", coremltools="9.0")
    others = {
        baseline_cache_key(b"zip-b", chip="m4-ane", macos="15.1", coremltools="9.0"),
        baseline_cache_key(b"zip-a", chip="m3-ane", macos="15.1", coremltools="9.0"),
        baseline_cache_key(b"zip-a", chip="m4-ane", macos="15.2", coremltools="9.0"),
        baseline_cache_key(b"zip-a", chip="m4-ane", macos="15.1", coremltools="9.1"),
    }
    assert base not in others and len(others) == 4


def test_it_stores_and_loads_timings(tmp_path):
    path = tmp_path / "cache" / "k.json"
    assert baseline_cache_load(path) is None
    baseline_cache_store(path, {"ALL": 812.5, "CPU_ONLY": 4031.0})
    assert baseline_cache_load(path) == {"ALL": 812.5, "CPU_ONLY": 4031.0}
    assert not list(path.parent.glob("*.tmp"))


def test_it_ignores_a_damaged_entry(tmp_path):
    path = tmp_path / "k.json"
    for text in ("{not json", '{"ALL": 1.0}', '{"ALL": -1.0, "CPU_ONLY": 2.0}', '["ALL", "CPU_ONLY"]'):
        path.write_text(text)
        assert baseline_cache_load(path) is None, text
