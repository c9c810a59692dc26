"""Celery's remote control and the broker, as the staff dashboard uses them.

A runner's workers are named `<runner>-gpu<i>@<host>` / `<runner>-cpu<i>@<host>` by `python -m gpu_runner serve`
(gpu_runner/worker.py), so the site finds them by name. Draining cancels their consumer of the pool's queue
(the job in hand finishes; nothing new is taken); resuming adds it back. Queue depth is read from the broker
with a passive queue_declare, which works the same on Redis and RabbitMQ.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from kombu.exceptions import ChannelError, OperationalError

from kernelhub.celery import app

logger = logging.getLogger(__name__)

# Seconds to wait for workers' replies: long enough for a busy host, short enough for a page load.
REPLY_TIMEOUT_S = 2.0


class ControlError(Exception):
    """The broker could not be reached: nothing was sent."""


def _worker_name_pattern(runner_name: str) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(runner_name)}-(gpu|cpu)\d+@")


def runner_worker_names(*, runner_name: str, timeout: float = REPLY_TIMEOUT_S) -> list[str]:
    """The Celery workers of this runner that answer a ping now."""
    pattern = _worker_name_pattern(runner_name)
    try:
        replies = app.control.ping(timeout=timeout) or []
    except (OSError, OperationalError) as e:
        raise ControlError(f"The broker did not answer ({e}): check CELERY_BROKER_URL.") from e
    names = [name for reply in replies for name in reply]
    return sorted(name for name in names if pattern.match(name))


def _send(command: str, *, queue: str, destinations: list[str], timeout: float) -> dict[str, Any]:
    if not destinations:
        return {}
    try:
        if command == "cancel_consumer":
            replies = app.control.cancel_consumer(queue, destination=destinations, reply=True, timeout=timeout)
        else:
            replies = app.control.add_consumer(queue, destination=destinations, reply=True, timeout=timeout)
    except (OSError, OperationalError) as e:
        raise ControlError(f"The broker did not answer ({e}): check CELERY_BROKER_URL.") from e
    out: dict[str, Any] = {}
    for reply in replies or []:
        out.update(reply)
    return out


def runner_stop_consuming(*, runner_name: str, queue: str, timeout: float = REPLY_TIMEOUT_S) -> dict[str, Any]:
    """cancel_consumer on every worker of the runner: they finish the job in hand and take no other.
    Returns {worker name: its reply}; a worker that did not answer is missing from it."""
    names = runner_worker_names(runner_name=runner_name, timeout=timeout)
    return _send("cancel_consumer", queue=queue, destinations=names, timeout=timeout)


def runner_start_consuming(*, runner_name: str, queue: str, timeout: float = REPLY_TIMEOUT_S) -> dict[str, Any]:
    """add_consumer on every worker of the runner: they take jobs of the pool's queue again."""
    names = runner_worker_names(runner_name=runner_name, timeout=timeout)
    return _send("add_consumer", queue=queue, destinations=names, timeout=timeout)


def queue_depth(queue: str) -> int | None:
    """Messages waiting in the queue (not those a worker holds unacked), or None when the broker is down."""
    try:
        with app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1, timeout=2)
            channel = connection.default_channel
            try:
                return int(channel.queue_declare(queue=queue, passive=True).message_count)
            except ChannelError:
                # Redis drops an empty list's key: a queue nobody ever filled, or an empty one, reads as absent.
                return 0
    except (OSError, OperationalError, ChannelError) as e:
        logger.warning("Could not read the depth of %s: %s", queue, e)
        return None
