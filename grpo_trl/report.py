"""``grpo-trl report OUTPUT_DIR``: PNG plots of a run's logs and one self-contained ``report.html``.

Reads ``trainer_state.json`` (TRL's log history), ``completions.jsonl`` and ``alerts.jsonl`` written during training.
Each plot lists the series it drew in ``report.json`` so tools (and tests) can check them without reading pixels.

Example:
    >>> from grpo_trl.report import write_report
    >>> write_report("outputs/tiny-cpu")  # doctest: +SKIP
    'outputs/tiny-cpu/report/report.html'
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

# plot file -> (title, series chooser)
PLOTS = {
    "rewards.png": (
        "Mean reward (total and per reward)",
        lambda k: k == "reward" or (k.startswith("rewards/") and k.endswith("/mean")),
    ),
    "reward_std.png": ("Reward std", lambda k: k == "reward_std" or (k.startswith("rewards/") and k.endswith("/std"))),
    "lengths.png": (
        "Completion length (tokens)",
        lambda k: k in ("completions/mean_length", "completions/min_length", "completions/max_length"),
    ),
    "kl_entropy.png": ("KL to reference and entropy", lambda k: k in ("kl", "entropy")),
    "clip_ratio.png": ("Clip ratios", lambda k: k.startswith("clip_ratio/") or k == "completions/clipped_ratio"),
    "zero_std.png": (
        "Fraction of groups with zero reward std (no learning signal)",
        lambda k: k == "frac_reward_zero_std",
    ),
    "timing.png": (
        "Seconds per step: total, generation, rewards",
        lambda k: k == "step_time" or k.startswith("timing/"),
    ),
}


def _state_file(output_dir: Path) -> Path:
    direct = output_dir / "trainer_state.json"
    if direct.exists():
        return direct
    checkpoints = sorted(
        output_dir.glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name.split("-")[-1])
    )
    if not checkpoints:
        raise FileNotFoundError(
            f"no trainer_state.json in {output_dir} or its checkpoints; is it a training output_dir?"
        )
    return checkpoints[-1]


def load_history(output_dir: str | Path) -> list[dict]:
    """The training log entries (those with a loss) from TRL's trainer_state.json."""
    state = json.loads(_state_file(Path(output_dir)).read_text())
    return [h for h in state.get("log_history", []) if "loss" in h and "step" in h]


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def plot_history(history: list[dict], out_dir: Path) -> dict[str, list[str]]:
    """Write the PNGs; return ``{file: [series plotted]}`` (plots with no data are skipped)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted({k for h in history for k, v in h.items() if isinstance(v, (int, float))})
    drawn: dict[str, list[str]] = {}
    for filename, (title, choose) in PLOTS.items():
        series = [k for k in keys if choose(k)]
        if not series:
            continue
        fig, ax = plt.subplots(figsize=(7, 3.6), dpi=100)
        for key in series:
            points = [(h["step"], h[key]) for h in history if isinstance(h.get(key), (int, float))]
            if points:
                xs, ys = zip(*points)
                ax.plot(xs, ys, label=key, linewidth=1.2)
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        fig.savefig(out_dir / filename)
        plt.close(fig)
        drawn[filename] = series
    return drawn


def _samples_table(samples: list[dict]) -> str:
    if not samples:
        return "<p>No completion samples were logged (completions.jsonl is missing).</p>"
    steps = sorted({s["step"] for s in samples})
    chosen = sorted({steps[0], steps[len(steps) // 2], steps[-1]})
    rows = []
    for step in chosen:
        for s in [x for x in samples if x["step"] == step][:3]:
            rewards = ", ".join(f"{k}={v}" for k, v in s.get("rewards", {}).items())
            rows.append(
                f"<tr><td>{step}</td><td><pre>{html.escape(s['prompt'][-400:])}</pre></td>"
                f"<td><pre>{html.escape(s['completion'])}</pre></td><td>{html.escape(rewards)}</td>"
                f"<td>{s.get('advantage')}</td></tr>"
            )
    return (
        "<table><tr><th>step</th><th>prompt (end)</th><th>completion</th><th>rewards</th><th>advantage</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def write_report(output_dir: str | Path) -> str:
    """Write ``<output_dir>/report/`` (PNGs, report.json, report.html); return the HTML path."""
    output_dir = Path(output_dir)
    history = load_history(output_dir)
    out = output_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    drawn = plot_history(history, out)
    samples = _read_jsonl(output_dir / "completions.jsonl")
    alerts = _read_jsonl(output_dir / "alerts.jsonl")
    first, last = (history[0], history[-1]) if history else ({}, {})
    summary = {
        "steps_logged": len(history),
        "first_step": first.get("step"),
        "last_step": last.get("step"),
        "reward_first": first.get("reward"),
        "reward_last": last.get("reward"),
        "plots": drawn,
        "alerts": alerts,
    }
    (out / "report.json").write_text(json.dumps(summary, indent=2))
    images = "".join(
        f'<h3>{html.escape(PLOTS[f][0])}</h3><img alt="{f}" src="data:image/png;base64,'
        f'{base64.b64encode((out / f).read_bytes()).decode()}"/>'
        for f in drawn
    )
    alert_html = "".join(
        f"<li>step {a['step']}: <b>{html.escape(a['kind'])}</b> {html.escape(a['message'])}</li>" for a in alerts
    )
    title = html.escape(str(output_dir))
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>grpo-trl report: {title}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:auto}}
pre{{white-space:pre-wrap;max-width:420px;font-size:11px}}
table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:4px;vertical-align:top}}</style></head><body>
<h1>GRPO run: {html.escape(str(output_dir))}</h1>
<p>{len(history)} logged steps; reward {summary["reward_first"]} at step {summary["first_step"]} &rarr;
{summary["reward_last"]} at step {summary["last_step"]}.</p>
<h2>Alerts</h2><ul>{alert_html or "<li>none</li>"}</ul>
<h2>Curves</h2>{images}
<h2>Sample completions (first, middle, last logged steps)</h2>{_samples_table(samples)}
</body></html>"""
    path = out / "report.html"
    path.write_text(page)
    return str(path)
