"""KernelHub's client: the `kernelhub` command (cli.py) and a small Python API (api.py)."""

from kernelhub_client.api import ApiError, Client, ClientError, ConfigError, NetworkError, WaitTimeout

__all__ = ["ApiError", "Client", "ClientError", "ConfigError", "NetworkError", "WaitTimeout"]
