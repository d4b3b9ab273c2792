"""Tools: registry, lookup, schema checks with the fix, the calculator (never eval), per-call time bound."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_trl.check import load_recipe
from grpo_trl.recipe import RecipeError
from grpo_trl.tools import ToolError, get_tool, lookup_tool, register_tool, tool_schema
from grpo_trl.tools.calculator import calculator
from grpo_trl.tools.registry import bounded
from tests.recipe.test_recipe import BASE, write

PLUGIN = "tests.tools.tool_plugin"
PLUGIN_FILE = """
from grpo_trl.tools import register_tool


@register_tool("file_plugin_upper")
def upper(text: str) -> str:
    '''Upper-case a text.

    Args:
        text: The text.
    '''
    return text.upper()
"""


def test_calculator_schema_is_what_the_model_sees():
    schema = tool_schema(calculator)
    assert schema["function"]["name"] == "calculator"
    assert schema["function"]["parameters"]["required"] == ["expression"]
    assert "parentheses" in schema["function"]["parameters"]["properties"]["expression"]["description"]


@st.composite
def expressions(draw, depth=3):
    if depth == 0 or draw(st.booleans()):
        n = draw(st.integers(0, 1000))
        return str(n), Fraction(n)
    (a, va), (b, vb) = draw(expressions(depth - 1)), draw(expressions(depth - 1))
    op = draw(st.sampled_from("+-*/"))
    if op == "/" and vb == 0:
        op = "+"
    value = {"+": va + vb, "-": va - vb, "*": va * vb, "/": va / vb if vb else None}[op]
    return f"({a} {op} {b})", value


@settings(max_examples=100, deadline=None)
@given(expressions())
def test_calculator_is_exact(case):
    text, value = case
    out = calculator(text)
    assert Fraction(out.split(" = ")[0]) == value


@pytest.mark.parametrize(
    "hostile",
    ["__import__('os').system('true')", "2 ** 1000000", "9" * 300, "open('/etc/passwd')", "1 +", "", "1 / 0", "x"],
)
def test_calculator_refuses_what_it_cannot_evaluate(hostile):
    with pytest.raises(ValueError, match="cannot evaluate"):
        calculator(hostile)


def test_lookup_by_name_module_and_plugin(tmp_path):
    assert lookup_tool("calculator") is calculator
    assert lookup_tool(f"{PLUGIN}:echo")("x") == "x"
    with pytest.raises(ToolError, match="did you mean 'calculator'"):
        lookup_tool("calculater")
    with pytest.raises(ToolError, match="cannot import module"):
        lookup_tool("no_such_module_x:f")
    with pytest.raises(ToolError, match="has no attribute"):
        lookup_tool(f"{PLUGIN}:nope")


@pytest.mark.parametrize(
    ("name", "fix"),
    [
        ("no_doc", "has no docstring"),
        ("no_hint", "type hint"),
        ("no_args_section", "under 'Args:'"),
    ],
)
def test_a_tool_the_model_cannot_read_is_refused_with_the_fix(name, fix):
    with pytest.raises(ToolError, match=fix):
        get_tool(f"{PLUGIN}:{name}")


def test_duplicate_registration_is_an_error():
    @register_tool("dup_tool_x")
    def a(x: int) -> int:
        """A.

        Args:
            x: X.
        """
        return x

    with pytest.raises(ToolError, match="already registered"):

        @register_tool("dup_tool_x")
        def b(x: int) -> int:
            return x


def test_bounded_tool_times_out_raises_and_cuts(tmp_path):
    from tests.tools.tool_plugin import explode, hang

    start = time.perf_counter()
    with pytest.raises(TimeoutError, match="did not return within 0.2 s"):
        bounded(hang, 0.2)(x=1)
    assert time.perf_counter() - start < 2
    with pytest.raises(RuntimeError, match="exploded"):
        bounded(explode)(x=1)

    def leave(code: int) -> int:
        raise SystemExit(code)

    with pytest.raises(RuntimeError, match=r"ended with SystemExit\(3\)"):  # exit() costs the call, not the run
        bounded(leave)(code=3)
    long = bounded(lambda text: text * 10_000, 5, max_chars=50)
    assert long(text="ab").endswith("[cut at 50 characters]")
    assert tool_schema(bounded(calculator)) == tool_schema(calculator)  # the model sees the same tool


@pytest.mark.parametrize(
    ("tools", "key", "fix"),
    [
        ("calculator", "tools", "expected list"),
        ([3], "tools.0", "expected mapping"),
        (["calculater"], "tools.0.name", "did you mean 'calculator'"),
        ([{"name": "calculator", "timeout": 0}], "tools.0.timeout", "positive number"),
        ([{"name": "calculator", "timeout": float("nan")}], "tools.0.timeout", "finite number"),
        ([{"name": "calculator", "timeout": float("inf")}], "tools.0.timeout", "finite number"),
        ([{"name": "calculator", "timeout": True}], "tools.0.timeout", "must be a number"),
        ([{"name": "calculator", "timeout": "soon"}], "tools.0.timeout", "must be a number"),
        ([{"name": "calculator", "timeot": 3}], "tools.0.timeot", "keys: name, timeout"),
        ([f"{PLUGIN}:no_doc"], "tools.0.name", "docstring"),
        (["calculator", "calculator"], "tools.1", "two tools named 'calculator'"),
    ],
)
def test_tools_section_errors(tmp_path, tools, key, fix):
    # the recipe schema (ToolSpec) refuses bad shapes; tool_problems then finds and reads each tool
    with pytest.raises(RecipeError) as caught:
        load_recipe(write(tmp_path, {**BASE, "tools": tools}))
    assert any(p.key == key and fix in p.message for p in caught.value.problems), caught.value.problems


def test_recipe_with_plugin_tool_validates(tmp_path):
    (tmp_path / "my_tools.py").write_text(PLUGIN_FILE)
    data = {**BASE, "model": {"name": "builtin:tiny-tools"}, "plugins": ["my_tools.py"]}
    data["tools"] = ["file_plugin_upper", "calculator"]
    assert [t["name"] for t in load_recipe(write(tmp_path, data)).data["tools"]] == ["file_plugin_upper", "calculator"]
    assert lookup_tool("file_plugin_upper")("a") == "A"


def test_cli_check_reports_an_unknown_tool(tmp_path, capsys):
    from grpo_trl.cli import main

    path = write(tmp_path, {**BASE, "tools": ["calculatr"]})
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "tools.0.name: unknown tool 'calculatr'" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("code", "expect"),
    [
        ("print(sum(range(101)))", "5050"),
        ("import os; print(sorted(os.listdir('.')))", "['main.py']"),  # a fresh directory with only the program
        ("raise SystemExit(3)", "error (exit code 3)"),
        ("1 / 0", "ZeroDivisionError"),
        ("import time\nwhile True: time.sleep(0.01)", "timed out after 1 s"),
        ("print('x' * 10_000_000)", "[output cut]"),
    ],
)
def test_python_tool_runs_in_the_sandbox(code, expect):
    from grpo_trl.tools.python import python

    reply = python(code, timeout_s=1) if "while" in code else python(code)
    assert expect in reply
    assert len(reply) < 2100


def test_python_tool_schema_and_environment_is_stripped(monkeypatch):
    from grpo_trl.tools.python import python

    monkeypatch.setenv("GRPO_SECRET_TEST", "hunter2")
    schema = tool_schema(python)["function"]["parameters"]
    assert schema["required"] == ["code"] and "timeout_s" in schema["properties"]
    assert "hunter2" not in python("import os; print(dict(os.environ))")
