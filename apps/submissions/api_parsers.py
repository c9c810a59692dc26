"""The API's JSON parser: DRF's, with a bound on nesting.

Python's JSON decoder recurses once per level: a body nested 100,000 deep raised RecursionError inside DRF's parser
(a 500 with the debug page). Here a body is refused with a 400 in the API's error shape when it nests deeper than
MAX_JSON_DEPTH; the decoder's own RecursionError (a body deeper than the interpreter's stack, about 1,000 levels)
is caught where it is raised and answered the same way, so nothing past the parser ever walks such a structure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

# No request of the API nests deeper than 5 (a runner's result: result.checks.device_lock[i].field).
MAX_JSON_DEPTH = 64


class JsonTooDeep(ParseError):
    default_code = "too_deep"


def _too_deep() -> JsonTooDeep:
    return JsonTooDeep(f"The JSON body nests deeper than {MAX_JSON_DEPTH} levels of objects and arrays; no request "
                       "of this API needs more: send a flatter body.")


def json_depth_exceeds(data: Any, limit: int) -> bool:
    """Whether `data` (decoded JSON) nests objects and arrays deeper than `limit`. Iterative: no recursion."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


class DepthLimitedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict | None = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise _too_deep() from None
        if json_depth_exceeds(data, MAX_JSON_DEPTH):
            raise _too_deep()
        return data
