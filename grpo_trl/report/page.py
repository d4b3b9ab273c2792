"""``grpo-trl report OUTPUT_DIR``: PNG plots of a run's logs and one self-contained ``report.html``.

Reads ``trainer_state.json`` (TRL's log history), ``completions.jsonl`` and ``alerts.jsonl`` written during training.
Each plot (drawn by report_plots.py) lists the series it drew in ``report.json`` so tools (and tests) can check
them without reading pixels.

Example:
    >>> from grpo_trl.report.page import write_report
    >>> write_report("outputs/tiny-cpu")  # doctest: +SKIP
    'outputs/tiny-cpu/report/report.html'
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from pathlib import Path

from grpo_trl.errors import GrpoTrlError
from grpo_trl.io import read_json, write
from grpo_trl.jsonio import read_jsonl
from grpo_trl.monitor.heldout import KIND as DIVERGING
from grpo_trl.monitor.heldout import is_heldout
from grpo_trl.report.html_parts import CSS, curves_html, none_table, runs_html, samples_table
from grpo_trl.report.plots import plot_heldout, plot_history
from grpo_trl.run.directory import Manifest, record_entries
from grpo_trl.run.resume import checkpoints as checkpoints_in

TREND_WINDOW = 20  # TrainResult.reward_trend's default, used by the end-of-run summary


def _trend_values(history: list[dict], key: str) -> list[float]:
    values = [h[key] for h in history if isinstance(h.get(key), (int, float)) and "loss" in h]
    return [v for v in values if math.isfinite(v)]


def trend_window(history: list[dict], window: int = TREND_WINDOW, key: str = "reward") -> int:
    """How many logged steps each end of ``reward_trend`` really averages: ``window``, or fewer on a short run
    (what the CLI summary and the report header name).

    >>> trend_window([{"loss": 0, "reward": r} for r in (1.0, 2.0, float("nan"), 3.0)])
    1
    """
    return min(window, max(1, len(_trend_values(history, key)) // 2))


def trend_label(history: list[dict]) -> str:
    """``first vs last N logged steps``, N from ``trend_window``: the words the CLI summary and the report share.

    >>> trend_label([{"loss": 0, "reward": 1.0}, {"loss": 0, "reward": 2.0}])
    'first vs last logged step'
    """
    n = trend_window(history)
    return "first vs last logged step" if n == 1 else f"first vs last {n} logged steps"


def reward_trend(history: list[dict], window: int = TREND_WINDOW, key: str = "reward") -> tuple[float, float] | None:
    """Mean of ``key`` over the first and last ``window`` training log entries (those with a ``loss``); at most half
    the entries each, so the two ends never overlap (``trend_window``). ``None`` when nothing was logged."""
    values = _trend_values(history, key)
    if not values:
        return None
    w = trend_window(history, window, key)
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


def _state_file(output_dir: Path) -> Path:
    direct = output_dir / "trainer_state.json"
    if direct.exists():
        return direct
    states = (c / "trainer_state.json" for c in checkpoints_in(output_dir))  # newest first; checkpoint-best: not one
    newest = next((p for p in states if p.is_file()), None)
    if newest is None:
        raise FileNotFoundError(
            f"no trainer_state.json in {output_dir} or its checkpoints; is it a training output_dir?"
        )
    return newest


def _log_history(output_dir: Path) -> list[dict]:
    """``log_history`` of the run's trainer_state.json; an unreadable one is an error line naming it."""
    path = _state_file(output_dir)
    try:
        state = read_json(path)  # the one bounded reader: a FIFO or a huge file is refused
    except (OSError, ValueError) as exc:
        raise GrpoTrlError(
            f"{path} is unreadable ({type(exc).__name__}: {str(exc)[:120]})", file=str(output_dir)
        ) from None
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list):
        raise GrpoTrlError(f"{path} has no log_history list: not a trainer state", file=str(output_dir))
    return [h for h in history if isinstance(h, dict)]


def load_history(output_dir: str | Path) -> list[dict]:
    """The training log entries (those with a loss) from TRL's trainer_state.json."""
    return [h for h in _log_history(Path(output_dir)) if "loss" in h and "step" in h]


def load_eval_history(output_dir: str | Path) -> list[dict]:
    """The evaluation log entries (``eval_*`` keys, written at each ``eval_steps``), prefix removed."""
    return [
        {"step": h["step"], **{k[len("eval_") :]: v for k, v in h.items() if k.startswith("eval_")}}
        for h in _log_history(Path(output_dir))
        if "step" in h and any(k.startswith("eval_") for k in h)
    ]


def load_heldout_history(output_dir: str | Path) -> list[dict]:
    """The held-out evaluation entries (``heldout/*`` keys, written by ``heldout:`` every N steps)."""
    return [h for h in _log_history(Path(output_dir)) if isinstance(h.get("step"), int) and is_heldout(h)]


def _read_jsonl(path: Path) -> list[dict]:
    """Rows with an integer step; a line cut by a kill mid-write, or edited by hand, is left out."""
    return [row for row in read_jsonl(path) if isinstance(row.get("step"), int)]


def _names(dirs: list[Path]) -> list[str]:
    """Each run's folder name, or its whole path where two runs share a name."""
    names = [d.name or str(d) for d in dirs]
    return [str(d) if names.count(n) > 1 else n for d, n in zip(dirs, names)]


def write_report(output_dir: str | Path, others: Sequence[str | Path] = ()) -> str:
    """Write ``<output_dir>/report/`` (PNGs, report.json, report.html), the runs in ``others`` drawn over it; return
    the HTML path. A folder that cannot be written (read-only, full, ``report`` a file) is one error naming what could
    not be written."""
    output_dir = Path(output_dir)
    history = load_history(output_dir)
    names = _names([output_dir, *map(Path, others)])
    overlaid = [(n, load_history(o), load_eval_history(o)) for n, o in zip(names[1:], others)]
    try:
        return _write_report(output_dir, history, names[0], overlaid, others)
    except OSError as exc:
        where = exc.filename or output_dir / "report"
        raise GrpoTrlError(
            f"cannot write {where} ({exc.strerror or exc})",
            file=str(output_dir),
            fix="make the folder writable, or copy the output_dir somewhere writable and run grpo-trl report there",
        ) from None


def _write_report(output_dir: Path, history: list[dict], name: str = "", overlaid: list = (), others=()) -> str:
    out = output_dir / "report"
    if out.is_symlink():  # its files are replaced as grpo-trl's own: never in a folder elsewhere
        raise GrpoTrlError(f"{out} is a symbolic link: grpo-trl never writes through one", file=str(output_dir))
    manifest = Manifest.load(output_dir)
    if out.exists() and manifest.exists and "report" not in manifest.entries:
        raise GrpoTrlError(
            f"{out} exists and grpo-trl did not write it (not in .grpo-trl/manifest.json)",
            file=str(output_dir),
            fix="move it away: the report would write into it and `train --overwrite` would then remove it",
        )
    record_entries(output_dir, "report")  # grpo-trl's own entry: `train --overwrite` may replace it
    out.mkdir(parents=True, exist_ok=True)
    samples = _read_jsonl(output_dir / "completions.jsonl")
    alerts = _read_jsonl(output_dir / "alerts.jsonl")
    diverged = [a["step"] for a in alerts if a.get("kind") == DIVERGING]
    heldout = [(n, h, load_heldout_history(o)) for (n, h, _), o in zip(overlaid, others)]
    drawn = {**plot_heldout(history, load_heldout_history(output_dir), out, diverged, name=name, others=heldout)}
    zero: set[str] = set()
    drawn.update(plot_history(history, out, load_eval_history(output_dir), name=name, others=overlaid, zero=zero))
    first, last = (history[0], history[-1]) if history else ({}, {})
    trend = reward_trend(history)  # the same numbers as the end-of-run summary of `grpo-trl train`
    window = trend_window(history)
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
        "always_zero": sorted(zero),
        "overlaid": [n for n, _, _ in overlaid],
    }
    write(out / "report.json", json.dumps(summary, indent=2), mine=True)  # report/ is grpo-trl's
    alert_html = "".join(
        f"<li>step {a['step']}: <b>{html.escape(str(a.get('kind')))}</b> {html.escape(str(a.get('message')))}</li>"
        for a in alerts
    )
    title, none_html = html.escape(str(output_dir)), none_table(summary["reward_none_share"])
    trend_html = (
        f"reward mean, {trend_label(history)}: {trend[0]:.3f} &rarr; {trend[1]:.3f}" if trend else "no reward logged"
    )
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>grpo-trl report: {title}</title>
<style>{CSS}</style></head><body>
<h1>GRPO run: {html.escape(str(output_dir))}</h1>
<p>{len(history)} logged steps (steps {summary["first_step"]} to {summary["last_step"]}); {trend_html}.</p>
<h2>Alerts</h2><ul>{alert_html or "<li>none</li>"}</ul>
<h2>Rows scored None per reward (skipped by TRL: faults, or the reward's own None)</h2>{none_html}
{runs_html([(n, len(h), reward_trend(h)) for n, h, _ in [(name, history, None), *overlaid]])}
<h2>Curves</h2><p>Lines are centred means of the logged values (drawn faint) once a run has 12 or more points;
<b>reward</b> (the weighted total) is the black line.</p>{curves_html(out, drawn, zero)}
<h2>Sample completions (first, middle, last logged steps)</h2>{samples_table(samples)}
</body></html>"""
    path = out / "report.html"
    write(path, page, mine=True)
    return str(path)
