"""On a terminal the progress is one line rewritten in place with \\r; elsewhere a line per change."""

import io
import os

from kernelhub_client.cli import Progress


def states():
    base = {"id": 5, "problem": "l1-19-relu", "hardware": "h200"}
    for status, stage in [("queued", "queued"), ("queued", "queued"), ("running", "compiling"),
                          ("running", "checking"), ("running", "timing"), ("done", "done")]:
        yield base | {"status": status, "stage": stage}


def test_it_rewrites_one_line_on_a_terminal():
    master, slave = os.openpty()
    with os.fdopen(slave, "w") as tty:
        progress = Progress(tty, 5)
        assert progress.tty
        for data in states():
            progress.update(data)
        progress.finish()
    chunks = []
    while True:  # the terminal hands the text back in pieces; EIO once all is read and the other end is closed
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    written = b"".join(chunks).decode().replace("\r\n", "\n")  # the terminal adds \r before \n
    assert written.count("\r") == 6 and written.endswith("\n") and written.count("\n") == 1
    assert written.index("compiling") < written.index("checking correctness") < written.index("timing")
    assert "#5 l1-19-relu on h200: done" in written


def test_it_prints_a_line_per_change_elsewhere():
    out = io.StringIO()
    progress = Progress(out, 5)
    for data in states():
        progress.update(data)
    progress.finish()
    lines = out.getvalue().splitlines()
    assert [line.split(": ", 1)[1].rsplit("  ", 1)[0] for line in lines] == [
        "queued", "compiling", "checking correctness", "timing", "done"]
    assert "\r" not in out.getvalue()
