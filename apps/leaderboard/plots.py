"""Plotly figures, built in Python from selector output and drawn in the page by plotly.js (static/vendor).

Each function returns a plain dict ({"data", "layout"}) ready for json_script, or None when there is nothing
to draw: the template then says so instead of showing empty axes.
"""

from __future__ import annotations

import json
import math
from typing import Any

import plotly.graph_objects as go

# One colour per entrant kind, and fixed ones for the two baselines, so a reader learns them once.
KIND_COLOURS = {"agent": "#7b4fd6", "llm": "#2f80c8", "human": "#119c8f", "baseline": "#8a93a0"}
# Baselines in greys (told apart by dash), so no entrant colour is mistaken for one.
BASELINE_STYLE = {"pytorch-eager": ("#9aa3ae", "dash"), "torch-compile": ("#5c6470", "dot")}
PALETTE = ["#4263eb", "#e8590c", "#2b8a3e", "#c2255c", "#1098ad", "#7048e8", "#f08c00", "#5c940d", "#a61e4d"]
MAX_ENTRANTS = 12  # more lines than this is a plate of spaghetti; the table has everyone


def _layout(**extra: Any) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "margin": {"l": 56, "r": 16, "t": 36, "b": 48},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "legend": {"orientation": "h", "y": -0.22, "x": 0},
        "hovermode": "closest",
        "height": 380,
    }
    layout.update(extra)
    return layout


# Where a log axis of speedups gets a label: real values, written out (plotly's own log ticks label 0.2-0.9 as
# "2 ... 9", which reads 0.2x as 2x).
LOG_TICKS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]


def log_speedup_axis(values: list[float], title: str) -> dict[str, Any]:
    """A log axis of speedups labelled with real values (0.1×, 0.2×, 0.5×, 1×, 2×, 5×, 10×) over the data's
    range, 1× always in view."""
    positive = [v for v in values if v and v > 0] or [1.0]
    lo, hi = min(min(positive), 1.0) / 1.25, max(max(positive), 1.0) * 1.25
    ticks = [t for t in LOG_TICKS if lo <= t <= hi]
    return {"title": {"text": title}, "type": "log", "tickvals": ticks, "ticktext": [f"{t:g}×" for t in ticks],
            "range": [math.log10(lo), math.log10(hi)]}


def _one_x_line(axis: str = "y") -> dict[str, Any]:
    """A dotted line at 1× (as fast as PyTorch eager) across the plot."""
    other = "x" if axis == "y" else "y"
    return {"type": "line", f"{other}ref": "paper", f"{other}0": 0, f"{other}1": 1, f"{axis}0": 1, f"{axis}1": 1,
            "line": {"color": "#8a93a0", "width": 1.5, "dash": "dot"}}


def _to_dict(fig: go.Figure) -> dict[str, Any]:
    # to_json: plotly's own encoder (numpy, dates); back to a dict so that json_script embeds it safely.
    return json.loads(fig.to_json())


def colours_for(slugs: list[str]) -> dict[str, str]:
    """One colour per entrant for every figure of a page, so a reader learns it once (baselines fixed)."""
    # By name, not by rank: a colour must not jump to another entrant when the ranking changes live.
    others = sorted(s for s in slugs if s not in BASELINE_STYLE)
    colours = {slug: PALETTE[i % len(PALETTE)] for i, slug in enumerate(others)}
    colours.update({slug: style[0] for slug, style in BASELINE_STYLE.items()})
    return colours


def _line_style(slug: str, index: int, colours: dict[str, str] | None = None) -> dict[str, Any]:
    if slug in BASELINE_STYLE:
        colour, dash = BASELINE_STYLE[slug]
        return {"color": colour, "dash": dash, "width": 2}
    colour = (colours or {}).get(slug) or PALETTE[index % len(PALETTE)]
    return {"color": colour, "width": 2.5}


def fast_p_figure(ps: list[float], curves: list[dict[str, Any]], *, vs: str,
                  colours: dict[str, str] | None = None) -> dict[str, Any] | None:
    """KernelBench's fast_p curve: the share of problems solved correctly AND faster than p x the baseline."""
    drawn = [c for c in curves if any(v for v in c["values"] if v)]
    if not drawn:
        return None
    baselines = [c for c in drawn if c["kind"] == "baseline"]
    others = [c for c in drawn if c["kind"] != "baseline"][:MAX_ENTRANTS]
    fig = go.Figure()
    for i, c in enumerate(others + baselines):
        fig.add_trace(go.Scatter(
            x=ps, y=[None if v is None else 100 * v for v in c["values"]], name=c["entrant"], mode="lines",
            line={**_line_style(c["slug"], i, colours), "shape": "hv"},
            hovertemplate=f"{c['entrant']}<br>p = %{{x:.2f}}: %{{y:.1f}}% of problems<extra></extra>",
        ))
    against = "PyTorch eager" if vs == "eager" else "torch.compile"
    fig.update_layout(**_layout(
        title={"text": f"fast_p against {against}", "font": {"size": 14}},
        xaxis={"title": {"text": f"p (speedup threshold over {against})"}, "rangemode": "tozero"},
        yaxis={"title": {"text": "fast_p (% of problems)"}, "range": [0, 101]},
        shapes=[{"type": "line", "x0": 1, "x1": 1, "yref": "paper", "y0": 0, "y1": 1,
                 "line": {"color": "#8a93a0", "width": 1, "dash": "dot"}}],
    ))
    return _to_dict(fig)


def speedup_distribution_figure(entries: list[dict[str, Any]],
                                colours: dict[str, str] | None = None) -> dict[str, Any] | None:
    """Best speedup vs eager per solved problem, one box per entrant and level (log scale: 0.5x and 2x are
    the same distance from 1x)."""
    with_points = [e for e in entries if any(p["speedup_vs_eager"] for p in e["points"])]
    # The eager baseline is 1.0x everywhere by definition: a flat box that says nothing.
    with_points = [e for e in with_points if e["slug"] != "pytorch-eager"]
    if not with_points:
        return None
    fig = go.Figure()
    for i, e in enumerate(with_points[: MAX_ENTRANTS + 1]):
        pts = [p for p in e["points"] if p["speedup_vs_eager"]]
        fig.add_trace(go.Box(
            x=[f"Level {p['level']}" for p in pts], y=[p["speedup_vs_eager"] for p in pts], name=e["entrant"],
            text=[p["problem"] for p in pts], boxpoints="all", jitter=0.35, pointpos=0,
            marker={"color": _line_style(e["slug"], i, colours)["color"], "size": 5},
            hovertemplate="%{text}: %{y:.2f}×<extra>" + e["entrant"] + "</extra>",
        ))
    values = [p["speedup_vs_eager"] for e in with_points for p in e["points"] if p["speedup_vs_eager"]]
    fig.update_layout(**_layout(
        title={"text": "Speedup over PyTorch eager per level (best per problem)", "font": {"size": 14}},
        boxmode="group", yaxis=log_speedup_axis(values, "speedup over eager (log scale)"),
        shapes=[_one_x_line("y")],
        # Annotations on a log axis take log10 of the value: 0 is 1×.
        annotations=[{"xref": "paper", "x": 1, "xanchor": "right", "y": 0, "yanchor": "bottom",
                      "text": "1× = as fast as eager", "showarrow": False, "font": {"size": 11, "color": "#8a93a0"}}],
    ))
    return _to_dict(fig)


def progress_figure(series: list[dict[str, Any]], *, metric: str = "geomean_speedup_vs_eager",
                    title: str = "Geomean speedup over time (problems solved so far)",
                    colours: dict[str, str] | None = None) -> dict[str, Any] | None:
    """Per entrant, a step line of the metric after each improvement (accepted results in time order)."""
    drawn = [s for s in series if s["points"]][:MAX_ENTRANTS]
    if not drawn:
        return None
    labels = {
        "geomean_speedup_vs_eager": "geomean speedup vs eager (solved problems)",
        "solved": "problems solved",
        "fast_1_vs_eager": "problems faster than eager",
    }
    fig = go.Figure()
    for i, s in enumerate(drawn):
        fig.add_trace(go.Scatter(
            x=[p["at"] for p in s["points"]], y=[p[metric] for p in s["points"]], name=s["entrant"],
            mode="lines+markers", line={**_line_style(s["slug"], i, colours), "shape": "hv"}, marker={"size": 5},
            hovertemplate="%{x|%Y-%m-%d %H:%M}: %{y:.3~f}<extra>" + s["entrant"] + "</extra>",
        ))
    fig.update_layout(**_layout(title={"text": title, "font": {"size": 14}},
                                yaxis={"title": {"text": labels.get(metric, metric)}, "rangemode": "tozero"}))
    return _to_dict(fig)


def entrant_trend_figure(points: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """One entrant: problems solved and problems beating eager (left axis), geomean speedup (right axis)."""
    if not points:
        return None
    at = [p["at"] for p in points]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=at, y=[p["solved"] for p in points], name="problems solved", mode="lines",
                             line={"color": "#2b8a3e", "shape": "hv", "width": 2.5}))
    fig.add_trace(go.Scatter(x=at, y=[p["fast_1_vs_eager"] for p in points], name="faster than eager",
                             mode="lines", line={"color": "#4263eb", "shape": "hv", "width": 2.5}))
    fig.add_trace(go.Scatter(x=at, y=[p["geomean_speedup_vs_eager"] for p in points], yaxis="y2",
                             name="geomean speedup vs eager", mode="lines+markers",
                             line={"color": "#e8590c", "shape": "hv", "dash": "dot"}, marker={"size": 5}))
    fig.update_layout(**_layout(
        title={"text": f"{name}: progress", "font": {"size": 14}},
        yaxis={"title": {"text": "problems"}, "rangemode": "tozero"},
        yaxis2={"title": {"text": "geomean speedup (×)"}, "overlaying": "y", "side": "right",
                "rangemode": "tozero", "showgrid": False, "tickformat": ".1f"},
        margin={"l": 56, "r": 56, "t": 36, "b": 48},
    ))
    return _to_dict(fig)


def runtime_bars_figure(entries: list[dict[str, Any]], title: str) -> dict[str, Any] | None:
    """Per-problem board: each entrant's best runtime as a bar, baselines in grey (shorter is faster)."""
    if not entries:
        return None
    shown = entries[:20]
    colours = [BASELINE_STYLE.get(e["entrant_slug"], (KIND_COLOURS.get(e["kind"], "#4263eb"), ""))[0]
               for e in shown]
    fig = go.Figure(go.Bar(
        x=[e["runtime_us"] for e in shown], y=[e["entrant"] for e in shown], orientation="h",
        marker={"color": colours},
        text=[f"{e['speedup_vs_eager']:.2f}× eager" if e["speedup_vs_eager"] else "" for e in shown],
        textposition="auto", hovertemplate="%{y}: %{x:.4~g} µs<extra></extra>",
    ))
    fig.update_layout(**_layout(
        title={"text": title, "font": {"size": 14}}, showlegend=False,
        xaxis={"title": {"text": "runtime (µs, lower is better)"}, "rangemode": "tozero"},
        yaxis={"autorange": "reversed", "automargin": True},
        height=max(220, 60 + 34 * len(shown)),
    ))
    return _to_dict(fig)


def head_to_head_figure(result: dict[str, Any]) -> dict[str, Any] | None:
    """Each problem both solved: A's speedup vs eager against B's. Above the diagonal, B is faster."""
    both = [p for p in result["problems"] if p["a"] and p["b"] and p["a"].speedup_vs_eager and p["b"].speedup_vs_eager]
    if not both:
        return None
    a, b = result["a"]["entrant"], result["b"]["entrant"]
    xs = [p["a"].speedup_vs_eager for p in both]
    ys = [p["b"].speedup_vs_eager for p in both]
    lo, hi = min(xs + ys) / 1.2, max(xs + ys) * 1.2
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="equal",
                             line={"color": "#8a93a0", "dash": "dot", "width": 1}, hoverinfo="skip"))
    fig.add_trace(go.Scatter(
        x=xs, y=ys, mode="markers", name="problems", text=[p["problem"].slug for p in both],
        marker={"size": 9, "color": ["#4263eb" if x > y else "#e8590c" if y > x else "#8a93a0" for x, y in zip(xs, ys, strict=True)]},
        hovertemplate="%{text}<br>" + a + ": %{x:.2f}×<br>" + b + ": %{y:.2f}×<extra></extra>",
    ))
    fig.update_layout(**_layout(
        title={"text": "Speedup over eager, problem by problem", "font": {"size": 14}}, showlegend=False,
        xaxis=log_speedup_axis(xs + ys, f"{a} (× eager, log scale)"),
        yaxis=log_speedup_axis(xs + ys, f"{b} (× eager, log scale)"),
        shapes=[_one_x_line("x"), _one_x_line("y")],
    ))
    return _to_dict(fig)
