"""The compact console line (monitor/console.py) and the report's plots (report/page.py) on a real tiny run that
logs a custom ``log_metric``, reward faults and eval metrics."""

from __future__ import annotations

import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grpo_trl.monitor.console import _duration, format_line
from grpo_trl.report.page import reward_trend

PLUGIN = '''
from grpo_trl.rewards import register_reward


@register_reward("t_logs")
def logs_and_faults(completions, log_metric=None, **kwargs):
    """Logs its own metric; raises on completions containing 'a' (a fault per such row)."""
    if log_metric is not None:
        log_metric("my/mean_chars", sum(len(c[0]["content"]) for c in completions) / len(completions))
    if any("a" in c[0]["content"] for c in completions):
        raise ValueError("boom")
    return [1.0 for _ in completions]
'''

metric_values = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5), st.text())


@given(
    logs=st.dictionaries(
        st.sampled_from(
            ["reward", "reward_std", "kl", "entropy", "completions/mean_length", "completions/clipped_ratio",
             "rewards/a/mean", "rewards/b c/mean", "rewards/a/std", "loss", "other"]
        ),
        metric_values,
    ),
    step=st.integers(0, 10**6),
    total=st.one_of(st.none(), st.integers(0, 10**6)),
    rate=st.one_of(st.none(), st.floats(0.001, 1e4)),
)  # fmt: skip
def test_the_line_is_one_line_for_any_log_entry(logs, step, total, rate):
    line = format_line(logs, step, total, rate)
    assert "\n" not in line and line.startswith(f"step {step}")
    assert "nan" not in line and "inf" not in line  # a non-finite value is left out, not printed
    if isinstance(logs.get("kl"), (int, float)) and math.isfinite(logs["kl"]):
        assert f"kl {logs['kl']:.4f}" in line
    if rate and total and total > step:
        assert "ETA" in line


def test_duration_and_trend_edges():
    assert [_duration(s) for s in (0, 59.4, 60, 3599, 3600, 86400)] == [
        "0s",
        "59s",
        "1m00s",
        "59m59s",
        "1h00m",
        "24h00m",
    ]
    assert reward_trend([]) is None and reward_trend([{"reward": 1.0}]) is None  # eval/summary entries have no loss
    assert reward_trend([{"loss": 0, "reward": 2.0}]) == (2.0, 2.0)
    assert reward_trend([{"loss": 0, "reward": float("nan")}, {"loss": 0, "reward": 1.0}]) == (1.0, 1.0)


def test_none_shares_and_smoothing_by_hand():
    from grpo_trl.report.page import none_shares
    from grpo_trl.report.plots import smooth

    history = [{"reward_none_frac/a": 0.0, "reward_none_frac/b": 1.0}, {"reward_none_frac/a": 0.5}]
    assert none_shares(history) == {"a": 0.25, "b": 1.0}
    assert smooth([0.0, 2.0, 4.0, 6.0, 8.0], 3) == [1.0, 2.0, 4.0, 6.0, 7.0]  # centred, not trailing


@pytest.mark.slow
def test_train_prints_one_line_per_step_and_the_report_draws_every_metric(tmp_path, make_recipe, capsys):
    import matplotlib.image

    from grpo_trl.cli import train_main
    from grpo_trl.report.page import write_report

    (tmp_path / "logs_rewards.py").write_text(PLUGIN)
    path = make_recipe(
        rewards=[{"name": "xml_format", "args": {"tags": ["think", "answer"], "per_tag": 0.25}}, "t_logs"],
        data={"builder": "countdown", "source": "generate", "size": 64, "system_prompt": "none", "eval_size": 8},
        trainer={
            "max_steps": 4,
            "beta": 0.04,
            "eval_strategy": "steps",
            "eval_steps": 2,
            "per_device_eval_batch_size": 8,
        },
        extra={"plugins": ["logs_rewards.py"]},
    )
    assert train_main([str(path)]) == 0
    out = capsys.readouterr().out
    lines = [x for x in out.splitlines() if x.startswith("step ")]
    assert [x.split(" |")[0] for x in lines] == ["step 1/4", "step 2/4", "step 3/4", "step 4/4"]
    assert all("reward " in x and "(xml_format " in x and "s/step" in x for x in lines)
    assert "ETA" in lines[0] and "ETA" not in lines[-1]
    assert "{'loss'" not in out and "'rewards/" not in out  # TRL's dict is gone from the console...
    assert sum(x.startswith("eval at step") for x in out.splitlines()) == 2
    state = json.loads((tmp_path / "out" / "trainer_state.json").read_text())
    assert all("rewards/t_logs/mean" in h for h in state["log_history"] if "loss" in h)  # ...but kept in the logs

    html_path = Path(write_report(tmp_path / "out"))
    summary = json.loads((html_path.parent / "report.json").read_text())
    plots = summary["plots"]
    assert plots["kl.png"] == ["kl"] and plots["entropy.png"] == ["entropy"]
    assert plots["truncated.png"] == ["completions/clipped_ratio"]
    assert "completions/clipped_ratio" not in plots.get("clip_ratio.png", [])
    assert "reward_faults/t_logs" in plots["reward_faults.png"]
    assert plots["metric_my.png"] == ["my/mean_chars"]
    assert plots["eval.png"] == ["eval_reward", "eval_rewards/t_logs/mean", "eval_rewards/xml_format/mean"]
    assert "eval_loss" in plots["eval_details.png"]
    numeric = {k for h in state["log_history"] if "loss" in h for k, v in h.items() if isinstance(v, (int, float))}
    drawn = {k for series in plots.values() for k in series}
    assert numeric - drawn <= {"step", "epoch", "num_tokens"}  # every logged metric is drawn somewhere
    for name in plots:
        image = matplotlib.image.imread(html_path.parent / name)
        assert image.shape[0] > 100 and image.shape[1] > 100
    # the header says what the end-of-run summary said
    cli = re.search(r"first vs last (\d+) logged steps: ([-\d.]+) -> ([-\d.]+)", out)
    page = html_path.read_text()
    assert cli and f"first vs last {cli.group(1)} logged steps: {cli.group(2)} &rarr; {cli.group(3)}" in page
    assert int(cli.group(1)) == summary["reward_trend_window"] == 2  # 4 logged steps: 2 at each end, not "20"
    assert summary["reward_trend"] == pytest.approx([float(cli.group(2)), float(cli.group(3))], abs=6e-4)

    assert train_main([str(path), "--overwrite", "--verbose", "--set", "trainer.max_steps=1"]) == 0
    out = capsys.readouterr().out
    assert "'loss'" in out and not any(x.startswith("step 1/1 |") for x in out.splitlines())


def _state(tmp_path: Path, history: list[dict]) -> Path:
    out = tmp_path / "run"
    out.mkdir()
    (out / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    return out


def test_summary_and_report_name_the_window_they_really_averaged(tmp_path, capsys):
    from grpo_trl.cli import print_summary
    from grpo_trl.report.page import write_report
    from grpo_trl.train import TrainResult

    rewards = [0.1, 0.2, float("nan"), 0.4, 0.5, 0.6]  # 6 logged steps, 5 finite rewards: 2 at each end
    history = [{"loss": 0.0, "step": i + 1, "reward": r} for i, r in enumerate(rewards)]
    out = _state(tmp_path, history)
    print_summary(TrainResult(str(out), 6, history))
    cli = capsys.readouterr().out
    assert "reward mean, first vs last 2 logged steps: 0.150 -> 0.550" in cli  # not "20" for a 2-step average
    page = Path(write_report(out)).read_text()
    assert "first vs last 2 logged steps: 0.150 &rarr; 0.550" in page
    assert json.loads((out / "report" / "report.json").read_text())["reward_trend_window"] == 2


def test_every_eval_metric_is_drawn_and_eval_kl_has_its_own_panel(tmp_path):
    from grpo_trl.report.page import write_report

    train = {"loss": 0.0, "reward": 0.5, "kl": 0.001}
    evals = {
        "eval_loss": 0.01, "eval_reward": 0.5, "eval_reward_std": 0.2, "eval_rewards/acc/mean": 0.5,
        "eval_rewards/acc/std": 0.1, "eval_kl": 0.002, "eval_entropy": 1.5, "eval_completions/mean_length": 40.0,
        "eval_completions/max_length": 64.0, "eval_completions/min_length": 3.0, "eval_completions/clipped_ratio": 0.1,
        "eval_completions/mean_terminated_length": 30.0, "eval_reward_faults/acc": 2.0,
        "eval_reward_none_frac/acc": 0.125, "eval_my/score": 0.7, "eval_timing/generation_s": 0.3,
        "eval_runtime": 1.2, "eval_samples_per_second": 9.0, "eval_num_tokens": 100.0,
    }  # fmt: skip
    history = [{**train, "step": s} for s in (1, 2, 3, 4)] + [{**evals, "step": s, "epoch": 0.5} for s in (2, 4)]
    out = _state(tmp_path, history)
    write_report(out)
    plots = json.loads((out / "report" / "report.json").read_text())["plots"]
    drawn = {k for series in plots.values() for k in series}
    bookkeeping = {"eval_runtime", "eval_samples_per_second", "eval_num_tokens"}
    assert set(evals) - bookkeeping <= drawn  # log_metric values and reward faults of the eval split included
    assert plots["eval_kl.png"] == ["eval_kl"]  # KL on its own panel, not beside lengths of 40 tokens
    assert "eval_loss" in plots["eval_details.png"] and "eval_kl" not in plots["eval_details.png"]


def test_the_eval_line_shows_the_eval_reward_and_its_per_reward_means():
    import io

    from transformers import TrainerControl, TrainerState

    from grpo_trl.monitor.console import ConsoleLine

    stream = io.StringIO()
    state = TrainerState(global_step=3, max_steps=6)
    logs = {
        "eval_frac_reward_zero_std": 0.0, "eval_reward_faults/a": 1.0, "eval_reward_faults/b": 0.0,
        "eval_reward_none_frac/a": 0.5, "eval_reward": 1.25, "eval_reward_std": 0.5, "eval_rewards/a/mean": 1.0,
        "eval_rewards/a/std": 0.0, "eval_rewards/b/mean": 0.25, "eval_rewards/b/std": 0.1, "eval_loss": 0.0,
    }  # fmt: skip
    ConsoleLine(stream).on_log(None, state, TrainerControl(), logs=logs)
    line = stream.getvalue().strip()
    assert line.startswith("eval at step 3 | ") and "\n" not in line
    assert "reward 1.250 ±0.500 (a 1.000, b 0.250)" in line  # the total first, as on the training line
    assert "std" not in line.replace("±", "") and "faults" not in line


@pytest.mark.parametrize("value", [1.7e308, -1.7e308, float("inf"), float("nan")])
def test_a_metric_matplotlib_cannot_scale_is_left_out_of_its_plot(tmp_path, value):
    """A user's log_metric may log any float; 1.7e308 made matplotlib raise while laying out ticks (exit 70)."""
    from grpo_trl.report.page import write_report

    history = [{"loss": 0.0, "reward": 0.5, "my/score": v, "step": s} for s, v in ((1, 1.0), (2, value), (3, 2.0))]
    out = _state(tmp_path, history)
    write_report(out)
    assert (out / "report" / "report.html").is_file() and list((out / "report").glob("metric_my*.png"))


def test_a_one_step_window_is_named_in_the_singular(tmp_path, capsys):
    from grpo_trl.cli import print_summary
    from grpo_trl.report.page import write_report
    from grpo_trl.train import TrainResult

    history = [{"loss": 0.0, "step": i + 1, "reward": r} for i, r in enumerate([0.1, 0.3])]
    out = _state(tmp_path, history)
    print_summary(TrainResult(str(out), 2, history))
    assert "reward mean, first vs last logged step: 0.100 -> 0.300" in capsys.readouterr().out
    assert "first vs last logged step: 0.100 &rarr; 0.300" in Path(write_report(out)).read_text()


# ------------------------------------------------------------------------------------------------ report.html's page
class _Page(HTMLParser):
    """The report's grids (the figures in each), its folded list and its table rows, as parsed from the HTML."""

    def __init__(self):
        super().__init__()
        self.grids, self.folded, self.rows, self._stack, self._summary = [], "", [], [], False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "div" and attrs.get("class") == "grid":
            self.grids.append({"images": [], "folded": "details" in self._stack})
        if tag == "img" and self.grids:
            self.grids[-1]["images"].append(attrs["alt"])
        if tag == "tr":
            self.rows.append([])
        self._summary = self._summary or tag == "summary"
        self._stack.append(tag)

    def handle_endtag(self, tag):
        self._summary = self._summary and tag != "summary"
        if tag in self._stack:
            self._stack.remove(tag)

    def handle_data(self, data):
        if self._summary:
            self.folded += data
        elif self._stack and self._stack[-1] == "td":
            self.rows[-1].append(data)


def _run(tmp_path: Path, name: str, rewards: list[float]) -> Path:
    history = [
        {"loss": 0.1, "step": i + 1, "reward": r, "rewards/acc/mean": r, "kl": 0.0, "clip_ratio/low_mean": 0.0}
        for i, r in enumerate(rewards)
    ]
    history += [{"step": 10, "heldout/pass@1": 0.25, "heldout/prompts": 8, "heldout/time_s": 1.0}]
    out = tmp_path / name
    out.mkdir()
    (out / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    return out


def test_the_report_is_a_grid_folds_always_zero_panels_and_overlays_runs(tmp_path, capsys):
    from grpo_trl.cli import main

    a = _run(tmp_path, "run-a", [i / 30 for i in range(30)])
    b = _run(tmp_path, "run-b", [0.5] * 20)
    assert main(["report", str(a), str(b)]) == 0
    assert "(2 runs overlaid)" in capsys.readouterr().out
    page = _Page()
    page.feed((a / "report" / "report.html").read_text())
    shown = [g for g in page.grids if not g["folded"]]
    folded = [g for g in page.grids if g["folded"]]
    assert shown and "display:grid" in (a / "report" / "report.html").read_text()
    assert shown[0]["images"][:2] == ["heldout.png", "rewards.png"]  # held-out accuracy first, then the reward
    assert folded and set(folded[0]["images"]) == {"kl.png", "clip_ratio.png"}  # every value 0: folded, one line
    assert page.folded.startswith("Always 0 (2): ") and "KL to the reference model" in page.folded
    assert [r[0] for r in page.rows if r and r[0].startswith("run-")] == ["run-a", "run-b"]
    summary = json.loads((a / "report" / "report.json").read_text())
    assert summary["overlaid"] == ["run-b"] and summary["always_zero"] == ["clip_ratio.png", "kl.png"]

    assert main(["report", str(a)]) == 0  # one run: no overlay table
    page = _Page()
    page.feed((a / "report" / "report.html").read_text())
    assert not [r for r in page.rows if r and r[0] == "run-b"]


@given(values=st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=200), window=st.integers(1, 50))
def test_smoothing_keeps_length_bounds_and_constants(values, window):
    from grpo_trl.report.plots import smooth

    out = smooth(values, window)
    assert len(out) == len(values)
    assert all(min(values) - 1e-6 <= v <= max(values) + 1e-6 for v in out)
    assert smooth([values[0]] * len(values), window) == pytest.approx([values[0]] * len(values))
    if window == 1:
        assert out == pytest.approx(values)


def test_the_warm_up_prints_one_line_not_trls_dicts(tmp_path, capsys):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig

    from grpo_trl.models.tiny import build_tiny_model, sft_warm_up

    path = build_tiny_model(tmp_path / "m")
    tokenizer, model = AutoTokenizer.from_pretrained(path), AutoModelForCausalLM.from_pretrained(path)
    data = Dataset.from_dict({"prompt": ["1+1="] * 8, "completion": ["2"] * 8})
    args = SFTConfig(
        output_dir=str(tmp_path / "sft"), max_steps=2, per_device_train_batch_size=4, logging_steps=1,
        save_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True, max_length=32,
    )  # fmt: skip
    sft_warm_up(model, tokenizer, args, data, tmp_path / "out", {})
    out = capsys.readouterr().out
    assert "{'loss'" not in out and "'train_runtime'" not in out
    assert re.search(r"^warm-up \(SFT, 2 steps\): loss [\d.]+ -> [\d.]+$", out, re.M)


REPORT_FILES = ("report.html", "report.json", "rewards.png", "heldout.png", "kl.png", "clip_ratio.png")


@pytest.mark.slow
@pytest.mark.parametrize("where", ["a file it writes", "report/ itself"])
@pytest.mark.parametrize("name", REPORT_FILES)
def test_the_report_never_writes_through_a_symlink_onto_a_users_file(tmp_path, capsys, name, where):
    """Every file of report/ (matplotlib's PNGs too, which ``savefig(path)`` wrote through a link) goes through the
    one writer; report/ itself a link to a folder of the user's: nothing of theirs is replaced, one error line."""
    from grpo_trl.cli import main

    run = _run(tmp_path, "run", [0.1, 0.2, 0.3])
    assert main(["report", str(run)]) == 0  # a first report: report/ is grpo-trl's from now on
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / name).write_text("the user's own")
    target = run / "report" / name
    if where == "report/ itself":
        target = run / "report"
        for f in target.iterdir():
            f.unlink()
        target.rmdir()
        target.symlink_to(mine, target_is_directory=True)
    else:
        target.unlink()
        target.symlink_to(mine / name)
    capsys.readouterr()
    assert main(["report", str(run)]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "symbolic link" in err[0], err
    assert (mine / name).read_text() == "the user's own" and sorted(p.name for p in mine.iterdir()) == [name]


def test_a_panel_has_a_grid_and_the_total_reward_is_its_thickest_line(tmp_path):
    """Each figure is read against a light grid; the weighted total (black) is drawn thicker than the rewards it
    sums, raw (few points) or smoothed (many), so it stands out where the lines cross."""
    from grpo_trl.report.plots import REWARD, _figure, _line

    axes = []
    for steps in (5, 40):
        history = [{"step": s, REWARD: s / 10, "rewards/acc/mean": s / 20} for s in range(1, steps + 1)]

        def draw(ax, history=history):
            axes.append(ax)
            for i, key in enumerate(["rewards/acc/mean", REWARD]):
                _line(ax, [("run", history)], key, f"C{i}")

        _figure("rewards", tmp_path / f"rewards-{steps}.png", draw)
        ax = axes[-1]
        assert (tmp_path / f"rewards-{steps}.png").read_bytes().startswith(b"\x89PNG")
        assert any(line.get_visible() for line in ax.get_xgridlines() + ax.get_ygridlines())
        labelled = {line.get_label(): line.get_linewidth() for line in ax.get_lines() if line.get_label()[0] != "_"}
        assert labelled[REWARD] > labelled["rewards/acc/mean"]
