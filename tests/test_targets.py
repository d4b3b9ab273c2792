"""``module.path:attribute`` targets: whatever a user's module does while importing or when its attribute is read,
the result is one error (``grpo-trl check`` prints one ``error:`` line), except Ctrl-C, which still stops."""

from __future__ import annotations

import itertools

import pytest
import yaml

from grpo_trl.cli import main as cli_main
from grpo_trl.registry import import_target

_ids = itertools.count()

MODULES = {
    "sys.exit(3)": ("import sys\nsys.exit(3)\n", "exit(3)"),
    "bare SystemExit": ("raise SystemExit\n", "exit(None)"),
    "a BaseException subclass": ("class Boom(BaseException):\n    pass\nraise Boom('custom')\n", "Boom: custom"),
    "an exception whose str() fails": (
        "class E(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\nraise E()\n",
        "E: (unprintable message)",
    ),
    "module __getattr__ that raises": (
        "def __getattr__(name):\n    raise RuntimeError('getattr explodes')\n",
        "reading 'f' failed: RuntimeError: getattr explodes",
    ),
    "a property that raises": (
        "import sys, types\nclass M(types.ModuleType):\n    @property\n    def f(self):\n"
        "        raise ValueError('property explodes')\nsys.modules[__name__].__class__ = M\n",
        "reading 'f' failed: ValueError: property explodes",
    ),
}


def _module(tmp_path, monkeypatch, source: str) -> str:
    name = f"t_target_mod_{next(_ids)}"
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


@pytest.mark.parametrize("case", list(MODULES))
def test_a_hostile_module_is_one_error(tmp_path, monkeypatch, case):
    source, words = MODULES[case]
    name = _module(tmp_path, monkeypatch, source)
    with pytest.raises(ValueError, match="tool") as info:
        import_target(f"{name}:f", "tool", ValueError)
    assert words in str(info.value)


def test_ctrl_c_while_importing_still_stops(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        import_target(f"{name}:f", "tool", ValueError)


@pytest.mark.parametrize("section", ["rewards", "tools", "environment"])
def test_sys_exit_while_importing_is_an_error_line_in_check(tmp_path, monkeypatch, capsys, section):
    name = _module(tmp_path, monkeypatch, "import sys\nsys.exit(0)\n")
    recipe = {
        "model": {"name": "no-such-org/no-such-model"},
        "data": {"builder": "countdown", "source": "generate", "size": 16},
        "rewards": [{"name": "countdown"}],
        "trainer": {"num_generations": 4, "per_device_train_batch_size": 8, "use_cpu": True, "bf16": False},
    }
    if section == "rewards":
        recipe["rewards"] = [{"name": f"{name}:f"}]
    elif section == "tools":
        recipe["tools"] = [f"{name}:f"]
    else:
        recipe["environment"] = {"factory": f"{name}:f"}
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(recipe))
    assert cli_main(["check", str(path)]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("error: ") and "exit(0) called while importing" in err[0], err
