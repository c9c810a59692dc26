"""create_runner on an ANE pool tells the admin to start ane_runner on the Mac, not gpu_runner."""

from io import StringIO

from django.core.management import call_command


def test_it_says_to_serve_with_ane_runner_on_a_mac(db):
    out = StringIO()
    call_command("create_runner", "--name", "mac-mini-1", "--pool", "m4-ane", stdout=out)
    text = out.getvalue()
    assert "Created pool m4-ane (ane, runs coreml)" in text
    assert "python -m ane_runner serve --site URL --token SECRET" in text
    assert "gpu_runner" not in text


def test_a_gpu_pool_still_gets_gpu_runner(db):
    out = StringIO()
    call_command("create_runner", "--name", "node-1", "--pool", "h100", stdout=out)
    assert "python -m gpu_runner serve" in out.getvalue() and "ane_runner" not in out.getvalue()
