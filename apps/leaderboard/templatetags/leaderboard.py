"""Number formats of the boards. static/js/leaderboard.js formats live updates the same way: keep in step."""

from django import template

register = template.Library()


@register.filter
def pct(value: object) -> str:
    """A rate in [0, 1] as a percentage with one decimal: 0.25 -> 25.0%."""
    if value is None or value == "":
        return "–"
    try:
        return f"{100 * float(value):.1f}%"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)


@register.filter
def sort_value(value: object) -> str:
    """The value a sortable column sorts by (empty sorts last)."""
    return "" if value is None else str(value)
