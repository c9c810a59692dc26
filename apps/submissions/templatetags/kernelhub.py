"""Formatting used by every page: times, speedups, verdict names, entrant kind badges, highlighted code."""

from __future__ import annotations

import functools

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CppLexer, PythonLexer, TextLexer

register = template.Library()

VERDICT_LABELS = {
    "accepted": "Accepted",
    "wrong_answer": "Wrong answer",
    "compile_error": "Compile error",
    "runtime_error": "Runtime error",
    "timeout": "Time limit exceeded",
    "rejected": "Rejected",
}
KIND_LABELS = {"agent": "RL agent", "llm": "LLM", "human": "Human", "baseline": "Baseline"}


@register.filter
def us(value: object) -> str:
    """Microseconds for people, three significant digits or so: 4.12 µs, 41.2 µs, 412 µs, 4.12 ms, 1.20 s.
    static/js/submission.js (fmtUs) formats the same way."""
    if value is None or value == "":
        return "–"
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    if v >= 1_000_000:
        return f"{v / 1_000_000:.2f} s"
    if v >= 1000:
        ms = v / 1000
        return f"{ms:.2f} ms" if ms < 10 else (f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms")
    return f"{v:.2f} µs" if v < 10 else (f"{v:.1f} µs" if v < 100 else f"{v:.0f} µs")


@register.filter
def duration(value: object) -> str:
    """Seconds for people: 85 ms, 3.2 s, 2 min 05 s."""
    if value is None or value == "":
        return "–"
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    if v < 1:
        return f"{v * 1000:.0f} ms"
    if v < 60:
        return f"{v:.1f} s"
    if v < 3600:
        minutes, rest = divmod(round(v), 60)
        return f"{minutes} min {rest:02d} s"
    hours, rest = divmod(round(v), 3600)
    return f"{hours} h {rest // 60:02d} min"


@register.filter
def speedup(value: object) -> str:
    if value is None or value == "":
        return "–"
    try:
        return f"{float(value):.2f}×"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)


@register.filter
def speedup_class(value: object) -> str:
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""
    return "speedup-good" if v >= 1 else "speedup-bad"


@register.filter
def verdict_label(verdict: str) -> str:
    return VERDICT_LABELS.get(verdict or "", verdict or "Pending")


@register.simple_tag
def verdict_badge(evaluation: object, large: bool = False) -> SafeString:
    """The verdict of an evaluation, or where it stands while it runs."""
    size = " badge-lg" if large else ""
    if evaluation is None:
        return format_html('<span class="badge verdict-pending{}">Not evaluated</span>', size)
    status = getattr(evaluation, "status", "")
    verdict = getattr(evaluation, "verdict", "")
    if status == "failed":
        return format_html('<span class="badge status-failed{}">No verdict: runner failure</span>', size)
    if verdict:
        return format_html(
            '<span class="badge verdict-{}{}">{}</span>', verdict, size, VERDICT_LABELS.get(verdict, verdict)
        )
    stage = getattr(evaluation, "stage", "") or status
    return format_html(
        '<span class="badge status-{}{}"><span class="spinner" aria-hidden="true"></span>{}</span>',
        status, size, STAGE_LABELS.get(stage, stage),
    )


@register.simple_tag
def kind_badge(kind: str) -> SafeString:
    return format_html('<span class="badge kind-{}">{}</span>', kind, KIND_LABELS.get(kind, kind))


@register.filter
def highlight_code(source: str, language: str = "python") -> SafeString:
    """Server-side highlighting (pygments); its colours are in static/css/pygments.css."""
    source = source or ""
    if len(source) <= _CACHED_SOURCE_MAX:
        return mark_safe(_highlight_cached(source, language))  # noqa: S308
    return mark_safe(_highlight(source, language))  # noqa: S308


def _highlight(source: str, language: str) -> str:
    lexer = {"python": PythonLexer, "cpp": CppLexer}.get(language, TextLexer)()
    return str(pygments_highlight(source, lexer, HtmlFormatter(cssclass="highlight")))


# Pygments takes ~5 ms for a reference file and every problem page shows the same few: keep recent ones
# (small sources only, so the cache stays a few MB).
_CACHED_SOURCE_MAX = 32 * 1024
_highlight_cached = functools.lru_cache(maxsize=256)(_highlight)


# The stage progress bar. static/js/submission.js mirrors this for live updates: keep them in step.
STAGE_STEPS = [
    ("queued", "Queued"),
    ("prescreen", "Pre-screen"),
    ("compiling", "Compiling"),
    ("checking", "Checking correctness"),
    ("timing", "Timing"),
    ("verdict", "Verdict"),
]
STAGE_LABELS = dict(STAGE_STEPS) | {"running": "Running", "done": "Done"}
# Where a verdict shows that the evaluation stopped.
FAILED_AT = {"compile_error": "compiling", "wrong_answer": "checking", "runtime_error": "checking"}


def stage_steps(status: str, stage: str, verdict: str) -> list[dict[str, str]]:
    """[{key, label, state}] with state in done | current | failed | pending."""
    keys = [k for k, _ in STAGE_STEPS]
    steps = [{"key": k, "label": label, "state": "pending"} for k, label in STAGE_STEPS]
    if status in ("queued", "running"):
        current = keys.index(stage) if stage in keys[:-1] else (0 if status == "queued" else len(keys) - 2)
        for i, s in enumerate(steps):
            s["state"] = "done" if i < current else ("current" if i == current else "pending")
        return steps
    if status == "failed":
        steps[0]["state"] = "done"
        steps[-1].update(state="failed", label="No verdict")
        return steps
    # done
    failed_at = FAILED_AT.get(verdict)
    last = keys.index(failed_at) if failed_at else len(keys) - 1
    for i, s in enumerate(steps[:-1]):
        s["state"] = "done" if i < last else ("failed" if i == last else "pending")
    steps[-1].update(
        state="done" if verdict == "accepted" else "failed", label=VERDICT_LABELS.get(verdict, "Verdict")
    )
    return steps


@register.inclusion_tag("submissions/_stages.html")
def stage_progress(evaluation: object) -> dict:
    if evaluation is None:
        return {"steps": stage_steps("queued", "queued", "")}
    return {
        "steps": stage_steps(
            getattr(evaluation, "status", ""), getattr(evaluation, "stage", ""), getattr(evaluation, "verdict", "")
        )
    }


# What KERNELHUB["precision"] lets a float32 problem's solution compute in (gpu_runner/precision.py).
PRECISION_TEXT = {
    "fp32": ("float32", "Float32 outputs are checked against a float64 run of the reference: compute in float32 "
                        "(no TF32, float16 or bfloat16 inputs or arithmetic)."),
    "tf32": ("TF32 allowed", "Float32 outputs may carry TF32-class error (10-bit significands in the products); "
                             "not float16 or bfloat16."),
    "fp16": ("float16 allowed", "Float32 outputs may carry float16-class error; not bfloat16."),
    "bf16": ("bfloat16 allowed", "Float32 outputs may carry bfloat16-class error."),
}


@functools.lru_cache(maxsize=256)
def _declared_precision(source: str) -> str | None:
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "KERNELHUB" for t in node.targets):
            try:
                meta = ast.literal_eval(node.value)
            except ValueError:
                return None
            value = meta.get("precision") if isinstance(meta, dict) else None
            return value if isinstance(value, str) else None
    return None


@register.filter
def problem_precision(source: str) -> dict[str, str]:
    """The precision a problem's float32 outputs must keep, for its page: {"level", "label", "help"}."""
    level = _declared_precision(source or "") or "fp32"
    label, help_text = PRECISION_TEXT.get(level, (level, "An unknown precision: the evaluator refuses this problem."))
    return {"level": level, "label": label, "help": help_text}


@register.filter
def precision_figures(result: object) -> dict[str, object] | None:
    """The evaluator's precision check of one evaluation (result["checks"]["precision"]), for people."""
    checks = result.get("checks") if isinstance(result, dict) else None
    figures = checks.get("precision") if isinstance(checks, dict) else None
    if not isinstance(figures, dict):
        return None
    level = str(figures.get("rule", ""))
    shown: dict[str, object] = {"level": level, "label": PRECISION_TEXT.get(level, (level, ""))[0],
                                "checked": bool(figures.get("checked")), "note": figures.get("note") or ""}
    if shown["checked"]:
        values = [figures.get(k) for k in ("error_vs_fp64", "reference_error_vs_fp64", "bound")]
        if not all(isinstance(v, int | float) for v in values):
            return None
        err, ref, bound = (float(v) for v in values)  # type: ignore[arg-type]
        shown.update({"error": f"{err:.2g}", "reference_error": f"{ref:.2g}", "bound": f"{bound:.2g}",
                      "ratio": f"{err / ref:.3g}x" if ref else "–", "within": err <= bound,
                      "of_bound": f"{err / bound:.2g}" if bound else "–",
                      "sampled": bool(figures.get("sampled")), "trials": figures.get("trials")})
    return shown
