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
import math
from pathlib import Path

from grpo_trl.run_dir import record_entries

TREND_WINDOW = 20  # TrainResult.reward_trend's default, used by the end-of-run summary

# plot file -> (title, series chooser)
PLOTS = {
    "rewards.png": (
        "Mean reward (total and per reward)",
        lambda k: k == "reward" or (k.startswith("rewards/") and k.endswith("/mean")),
    ),
    "reward_std.png": ("Reward std", lambda k: k == "reward_std" or (k.startswith("rewards/") and k.endswith("/std"))),
    "lengths.png": (
        "Completion length (tokens)",
        lambda k: k.startswith("completions/") and k.endswith("_length"),  # all, and those that ended with EOS
    ),
    "truncated.png": (
        "Completions cut at max_completion_length (fraction)",
        lambda k: k == "completions/clipped_ratio",
    ),
    "kl.png": ("KL to the reference model", lambda k: k == "kl"),
    "entropy.png": ("Token entropy", lambda k: k == "entropy"),
    "clip_ratio.png": ("Trust-region clip ratios (importance sampling)", lambda k: k.startswith("clip_ratio/")),
    "zero_std.png": (
        "Fraction of groups with zero reward std (no learning signal)",
        lambda k: k == "frac_reward_zero_std",
    ),
    "reward_none.png": ("Share of rows each reward scored None", lambda k: k.startswith("reward_none_frac/")),
    "loss_grad.png": ("Loss and gradient norm", lambda k: k in ("loss", "grad_norm")),
    "learning_rate.png": ("Learning rate", lambda k: k == "learning_rate"),
    "reward_faults.png": (
        "Reward faults (rows scored None per batch, by reward)",
        lambda k: k.startswith("reward_faults/"),
    ),
    "timing.png": (
        "Seconds per step: total, generation, rewards",
        lambda k: k == "step_time" or k.startswith("timing/"),
    ),
}
EVAL_MAIN = PLOTS["rewards.png"][1]  # the eval panel shows the rewards; the rest go to eval_details.png
EVAL_FIRST = ("loss", "reward_std", "completions/mean_length", "completions/clipped_ratio", "kl", "entropy")
# bookkeeping, not curves
NOT_PLOTTED = {"step", "epoch", "num_tokens", "total_flos", "train_runtime", "train_loss"}
NOT_PLOTTED_SUFFIXES = ("_per_second", "_runtime")


def _other_groups(keys: list[str], drawn: set[str]) -> dict[str, list[str]]:
    """Metrics no fixed plot draws (``log_metric`` from rewards, new TRL metrics), grouped by their first path part.

    >>> _other_groups(["my/acc", "my/len", "solo", "kl"], {"kl"})
    {'my': ['my/acc', 'my/len'], 'solo': ['solo']}
    """
    groups: dict[str, list[str]] = {}
    for key in keys:
        if key in drawn or key in NOT_PLOTTED or key.endswith(NOT_PLOTTED_SUFFIXES):
            continue
        groups.setdefault(key.split("/")[0], []).append(key)
    return groups


def reward_trend(history: list[dict], window: int = TREND_WINDOW, key: str = "reward") -> tuple[float, float] | None:
    """Mean of ``key`` over the first and last ``window`` training log entries (those with a ``loss``); at most half
    the entries each, so the two ends never overlap. ``None`` when nothing was logged."""
    values = [h[key] for h in history if isinstance(h.get(key), (int, float)) and "loss" in h]
    values = [v for v in values if math.isfinite(v)]
    if not values:
        return None
    w = min(window, max(1, len(values) // 2))
    return sum(values[:w]) / w, sum(values[-w:]) / w


NONE_PREFIX = "reward_none_frac/"  # per logged step, the share of rows a reward scored None (the safety wrapper)


def none_shares(history: list[dict]) -> dict[str, float]:
    """Per reward, the share of rows scored ``None`` over the logged steps (mean of ``reward_none_frac/<name>``).

    >>> none_shares([{"reward_none_frac/a": 0.0, "reward_none_frac/b": 1.0}, {"reward_none_frac/a": 0.5}])
    {'a': 0.25, 'b': 1.0}
    """
    values: dict[str, list[float]] = {}
    for h in history:
        for key, value in h.items():
            if key.startswith(NONE_PREFIX) and isinstance(value, (int, float)):
                values.setdefault(key[len(NONE_PREFIX) :], []).append(float(value))
    return {name: sum(v) / len(v) for name, v in values.items()}


def _none_table(history: list[dict]) -> str:
    shares = none_shares(history)
    if not shares:
        return "<p>No per-reward None shares were logged.</p>"
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{share:.1%}</td></tr>" for name, share in sorted(shares.items())
    )
    return f"<table><tr><th>reward</th><th>rows scored None</th></tr>{rows}</table>"


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


def load_eval_history(output_dir: str | Path) -> list[dict]:
    """The evaluation log entries (``eval_*`` keys, written at each ``eval_steps``), prefix removed."""
    state = json.loads(_state_file(Path(output_dir)).read_text())
    return [
        {"step": h["step"], **{k[len("eval_") :]: v for k, v in h.items() if k.startswith("eval_")}}
        for h in state.get("log_history", [])
        if "step" in h and any(k.startswith("eval_") for k in h)
    ]


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _draw(plt, title: str, series: list[str], history: list[dict], path: Path) -> bool:
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=100)
    drew = False
    for key in series:
        points = [(h["step"], h[key]) for h in history if isinstance(h.get(key), (int, float))]
        if points:
            xs, ys = zip(*points)
            ax.plot(xs, ys, label=key, linewidth=1.2, marker="o" if len(xs) < 12 else None, markersize=3)
            drew = True
    ax.set_title(title)
    ax.set_xlabel("step")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
    ax.grid(alpha=0.3)
    if drew:
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        fig.savefig(path)
    plt.close(fig)
    return drew


def plot_title(filename: str) -> str:
    """The heading of a PNG written by ``plot_history``."""
    if filename in PLOTS:
        return PLOTS[filename][0]
    if filename == "eval.png":
        return "Evaluation on the eval split: mean reward (total and per reward)"
    if filename == "eval_details.png":
        return "Evaluation on the eval split: other metrics"
    return f"Logged metric: {filename[len('metric_') : -len('.png')]}"


def plot_history(history: list[dict], out_dir: Path, eval_history: list[dict] | None = None) -> dict[str, list[str]]:
    """Write the PNGs; return ``{file: [series plotted]}`` (plots with no data are skipped). Every numeric metric
    is drawn somewhere: the fixed plots, then one ``metric_<group>.png`` per remaining group (``log_metric`` values
    from rewards...), then ``eval.png`` for the evaluation metrics."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted(
        {k for h in history for k, v in h.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    )
    drawn: dict[str, list[str]] = {}
    for filename, (title, choose) in PLOTS.items():
        series = [k for k in keys if choose(k)]
        if series and _draw(plt, title, series, history, out_dir / filename):
            drawn[filename] = series
    taken = {k for series in drawn.values() for k in series}
    for group, series in _other_groups(keys, taken).items():
        filename = "metric_" + "".join(c if c.isalnum() or c in "-_" else "_" for c in group)[:60] + ".png"
        if _draw(plt, f"Logged metric: {group}", series, history, out_dir / filename):
            drawn[filename] = series
    if eval_history:
        eval_keys = sorted({k for h in eval_history for k, v in h.items() if isinstance(v, (int, float))})
        main = [k for k in eval_keys if EVAL_MAIN(k)]
        rest = [
            k
            for k in eval_keys
            if k not in main
            and k != "step"
            and not k.startswith("clip_ratio/")
            and not k.endswith(NOT_PLOTTED_SUFFIXES)
        ]  # trust-region clip ratios are 0 in evaluation (no policy update)
        rest.sort(key=lambda k: (k not in EVAL_FIRST, k))
        for filename, series in (("eval.png", main), ("eval_details.png", rest[:10])):
            if series and _draw(plt, plot_title(filename), series, eval_history, out_dir / filename):
                drawn[filename] = ["eval_" + k for k in series]
    return drawn


def _completion_html(sample: dict) -> str:
    """The completion, or with tools its turns one per block: [assistant], [tool_call], [tool]."""
    if not sample.get("turns"):
        return f"<pre>{html.escape(sample['completion'])}</pre>"
    return "".join(
        f"<div class='turn {html.escape(t['role'])}'><b>[{html.escape(t['role'])}]</b>"
        f"<pre>{html.escape(t['content'])}</pre></div>"
        for t in sample["turns"]
    )


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
                f"<td>{_completion_html(s)}</td><td>{html.escape(rewards)}</td>"
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
    record_entries(output_dir, "report")  # grpo-trl's own entry: `train --overwrite` may replace it
    out.mkdir(parents=True, exist_ok=True)
    drawn = plot_history(history, out, load_eval_history(output_dir))
    samples = _read_jsonl(output_dir / "completions.jsonl")
    alerts = _read_jsonl(output_dir / "alerts.jsonl")
    first, last = (history[0], history[-1]) if history else ({}, {})
    trend = reward_trend(history)  # the same numbers as the end-of-run summary of `grpo-trl train`
    window = min(TREND_WINDOW, max(1, len(history) // 2))
    summary = {
        "steps_logged": len(history),
        "first_step": first.get("step"),
        "last_step": last.get("step"),
        "reward_first": first.get("reward"),
        "reward_last": last.get("reward"),
        "reward_trend": list(trend) if trend else None,
        "reward_trend_window": window,
        "plots": drawn,
        "alerts": alerts,
        "reward_none_share": none_shares(history),
    }
    (out / "report.json").write_text(json.dumps(summary, indent=2))
    images = "".join(
        f'<h3>{html.escape(plot_title(f))}</h3><img alt="{f}" src="data:image/png;base64,'
        f'{base64.b64encode((out / f).read_bytes()).decode()}"/>'
        for f in drawn
    )
    alert_html = "".join(
        f"<li>step {a['step']}: <b>{html.escape(a['kind'])}</b> {html.escape(a['message'])}</li>" for a in alerts
    )
    title = html.escape(str(output_dir))
    trend_html = (
        f"reward mean, first vs last {window} logged steps: {trend[0]:.3f} &rarr; {trend[1]:.3f}"
        if trend
        else "no reward logged"
    )
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>grpo-trl report: {title}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:auto}}
pre{{white-space:pre-wrap;max-width:420px;font-size:11px}}
table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:4px;vertical-align:top}}</style></head><body>
<h1>GRPO run: {html.escape(str(output_dir))}</h1>
<p>{len(history)} logged steps (steps {summary["first_step"]} to {summary["last_step"]}); {trend_html}.</p>
<h2>Alerts</h2><ul>{alert_html or "<li>none</li>"}</ul>
<h2>Rows scored None per reward (skipped by TRL: faults, or the reward's own None)</h2>{_none_table(history)}
<h2>Curves</h2>{images}
<h2>Sample completions (first, middle, last logged steps)</h2>{_samples_table(samples)}
</body></html>"""
    path = out / "report.html"
    path.write_text(page)
    return str(path)
