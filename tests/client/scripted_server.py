"""A tiny HTTP server of the tests' own that answers from a script, to drive the client's retry paths.

It stands in for a failing site (502, 503, with or without Retry-After), which the real site does not produce
on cue; 429 comes from the real site's rate limit (test_rate_limit.py).
"""

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def scripted_server(script: list[tuple[int, dict, object]]) -> Iterator[tuple[str, list[dict]]]:
    """Serves `script` in order, one (status, headers, json body) per request; the last one repeats.

    Yields the base URL and the list of requests seen (method, path, headers, body, time).
    """
    import time

    seen: list[dict] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with lock:
                index = min(len(seen), len(script) - 1)
                seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                             "body": body, "time": time.monotonic()})
            status, headers, payload = script[index]
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = _answer
        do_POST = _answer

        def log_message(self, *args: object) -> None:  # keep pytest's output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
