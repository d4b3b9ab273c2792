"""The HTML pieces of ``report.html`` (page.py assembles them): the plot grid, the runs overlaid, the tables."""

from __future__ import annotations

import base64
import html
from pathlib import Path

from grpo_trl.report.plots import plot_title


def figure(out: Path, filename: str) -> str:
    data = base64.b64encode((out / filename).read_bytes()).decode()
    title = html.escape(plot_title(filename))  # the plot's own title is drawn in the image
    return f'<figure><img alt="{filename}" title="{title}" src="data:image/png;base64,{data}"/></figure>'


def curves_html(out: Path, drawn: dict, zero: set[str]) -> str:
    """The plots in a grid; those whose every value is 0 folded into one line that opens onto them."""
    shown = "".join(figure(out, f) for f in drawn if f not in zero)
    folded = [f for f in drawn if f in zero]
    if not folded:
        return f"<div class='grid'>{shown}</div>"
    names = ", ".join(html.escape(plot_title(f)) for f in folded)
    inner = "".join(figure(out, f) for f in folded)
    return (
        f"<div class='grid'>{shown}</div><details class='zero'><summary>Always 0 ({len(folded)}): {names}"
        f"</summary><div class='grid'>{inner}</div></details>"
    )


def runs_html(runs: list[tuple[str, int, tuple[float, float] | None]]) -> str:
    """With runs overlaid (``runs``: name, logged steps, reward trend): one row each with its line style."""
    if len(runs) < 2:
        return ""
    rows = []
    for i, (run, steps, trend) in enumerate(runs):
        change = f"{trend[0]:.3f} &rarr; {trend[1]:.3f}" if trend else "no reward logged"
        style = ("solid", "dashed", "dotted", "dash-dot")[i % 4]
        rows.append(f"<tr><td>{html.escape(run)}</td><td>{style}</td><td>{steps}</td><td>{change}</td></tr>")
    head = "<tr><th>run</th><th>line</th><th>logged steps</th><th>reward mean, first vs last logged steps</th></tr>"
    return f"<h2>Runs overlaid</h2><table>{head}{''.join(rows)}</table>"


CSS = """body{font-family:sans-serif;margin:12px 24px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:10px}
figure{margin:0} figcaption{font-weight:bold;font-size:13px} figure img{width:100%;height:auto}
details.zero summary{cursor:pointer;color:#555;margin:8px 0}
pre{white-space:pre-wrap;max-width:520px;font-size:11px}
table{border-collapse:collapse} td,th{border:1px solid #ccc;padding:4px;vertical-align:top}"""


def none_table(shares: dict[str, float]) -> str:
    if not shares:
        return "<p>No per-reward None shares were logged.</p>"
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{share:.1%}</td></tr>" for name, share in sorted(shares.items())
    )
    return f"<table><tr><th>reward</th><th>rows scored None</th></tr>{rows}</table>"


def completion_html(sample: dict) -> str:
    """The completion, or with tools its turns one per block: [assistant], [tool_call], [tool]."""
    if not sample.get("turns"):
        return f"<pre>{html.escape(str(sample.get('completion', '')))}</pre>"
    turns = [t for t in sample["turns"] if isinstance(t, dict)] if isinstance(sample["turns"], list) else []
    return "".join(
        f"<div class='turn {html.escape(str(t.get('role')))}'><b>[{html.escape(str(t.get('role')))}]</b>"
        f"<pre>{html.escape(str(t.get('content')))}</pre></div>"
        for t in turns
    )


def samples_table(samples: list[dict]) -> str:
    if not samples:
        return "<p>No completion samples were logged (completions.jsonl is missing).</p>"
    steps = sorted({s["step"] for s in samples})
    chosen = sorted({steps[0], steps[len(steps) // 2], steps[-1]})
    rows = []
    for step in chosen:
        for s in [x for x in samples if x["step"] == step][:3]:
            scores = s.get("rewards") if isinstance(s.get("rewards"), dict) else {}
            rewards = ", ".join(f"{k}={v}" for k, v in scores.items())
            rows.append(
                f"<tr><td>{step}</td><td><pre>{html.escape(str(s.get('prompt', ''))[-400:])}</pre></td>"
                f"<td>{completion_html(s)}</td><td>{html.escape(rewards)}</td>"
                f"<td>{html.escape(str(s.get('advantage')))}</td></tr>"
            )
    return (
        "<table><tr><th>step</th><th>prompt (end)</th><th>completion</th><th>rewards</th><th>advantage</th></tr>"
        + "".join(rows)
        + "</table>"
    )
