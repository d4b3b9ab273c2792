"""Every code block in README.md and docs/*.md is executed, so the documentation cannot drift from the code.

One test per page; a page's blocks run in order in a fresh working folder that links the repository's
``recipes/``, ``examples/`` and ``bench/`` (so paths read as the docs write them, and nothing is written into the
checkout). The rules, by the block's language:

- ``python``: run in one Python process per page, in order, sharing one namespace (like a doctest session); each
  block in a fresh sub-folder of the working folder. ``pycon`` (``>>>``): run with ``doctest`` in that namespace.
- ``yaml``: a whole recipe (it has ``model:`` and ``data:``) is loaded with ``grpo_trl.load_recipe`` and checked
  with ``grpo-trl check``; exit 0. Any other block is a fragment, written beside the fixtures as a recipe that
  ``extends:`` a base recipe (grpo-trl's own deep merge: mappings merge key by key, anything else, lists included,
  replaces the base's value) and checked the same way; the base is ``recipes/demo/tiny-cpu.yaml`` unless
  ``PAGE_OPTIONS`` names another. A block whose first line is ``# NAME.yaml`` is written under that name, so later
  blocks can use it (a recipe meant to fail is checked by the ``console`` block that shows its errors).
- ``bash`` / ``sh`` / ``console``: each command (``\\`` continuations joined, ``&&`` split, comments dropped,
  ``VAR=value`` prefixes such as ``CUDA_VISIBLE_DEVICES`` dropped; in ``console`` blocks, the lines after ``$ `` are
  commands and the lines up to the next ``$ `` their output):
  * ``grpo-trl check | schema | import | data | rewards | report | --help`` run for real; where the doc shows
    output it must equal the real output (stdout + stderr), or, when the shown output has ``...`` lines, each run
    of lines between them must appear, in order. A shown ``error:`` line means exit 1, otherwise exit 0.
  * ``grpo-trl serve`` runs with ``--dry-run`` (it would start a GPU server); ``grpo-trl train`` is checked by
    ``grpo-trl check`` with the same recipe and ``--set`` arguments; ``grpo-trl eval | filter`` (they need a trained
    model or a server) by ``grpo-trl check`` of the recipe plus every ``--flag`` being in that command's ``--help``;
    ``grpo-trl export`` (it needs a trained LoRA run) by its flags being in ``grpo-trl export --help``.
  * ``accelerate launch``: the ``--config_file`` exists, the module is ``grpo_trl.train``, and
    ``grpo-trl check RECIPE --set ... --world-size <num_processes>`` exits 0 (``num_processes`` from the command,
    else from the accelerate config).
- A block or command that does not work as written today because of a grpo-trl bug is listed in ``PAGE_OPTIONS``
  (``known_bug``) or ``KNOWN_BUGS`` with its cause; the test asserts that exact failure, so it fails once the bug
  is fixed and the entry must go.
  * ``make``: each target is a Makefile rule; ``RECIPE=`` names an existing file, ``ACCEL=`` an existing
    ``recipes/accelerate/<ACCEL>.yaml``.
  * ``pip install``: a local ``.[extras]`` names extras in pyproject.toml; a path is one a make target writes
    (``BUILT``); anything else must parse as a requirement.
  * ``python -m MODULE``: the module exists. ``export``: sets the environment of later commands.
  * ``vllm``: a program of another project (``EXTERNAL``), named for the reader; nothing here can run it.
  * ``RECIPE`` as an argument stands for the Makefile's default recipe.
- ``text``: output or diagrams; nothing to run.
- A fence with ``file=NAME`` (```` ```jsonl file=questions.jsonl ````, ```` ```python file=my_rewards.py ````): the
  block is a file the reader writes, written under that name in the working folder for the blocks after it.
- On ``RUN_PAGES`` (the quickstart), ``grpo-trl train`` and ``grpo-trl eval`` run for real (a tiny CPU run), so the
  page's ``report`` reads a real run.

Every ``grpo-trl`` command runs as the CLI's ``main(argv)`` in one worker process per page (the page's environment
and working folder; stdout and stderr captured); it and the page's python-block process fork from a zygote that
imported TRL once per pytest worker, rather than once per page or per command.

Anything else (another language, an unknown command, an unknown ``grpo-trl`` subcommand) fails the test: no block is
skipped silently. Placeholder code the docs name (``my_pkg.rewards:brevity``, ``my_rewards.py``, ``./my-rm``...) is
provided by ``FIXTURES`` as minimal stand-ins; models on the Hub that a check reads the ``config.json`` of are
provided in a fake, offline Hugging Face cache. Per-block settings (another base recipe, ``--set`` overrides, a fake
OpenAI server) are in ``PAGE_OPTIONS``, keyed by a text the block holds, each with its reason.
"""

from __future__ import annotations

import json
import os
import re
import select
import shlex
import socket
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DEFAULT_BASE = "recipes/demo/tiny-cpu.yaml"
LINKED = ("recipes", "examples", "bench")
EXTERNAL = {"vllm": "vLLM's own CLI (the `vllm serve` of an OpenAI-compatible server); not installed with the tests"}
BUILT = {"wheelhouse/": "gpu-wheels"}  # paths that a make target writes (ignored by git)
RUN_PAGES = {"quickstart.md"}  # `grpo-trl train` and `eval` run for real (tiny, CPU), so `report` has a run to read

FIXTURES = {
    "my_rewards.py": """
        from grpo_trl import register_reward


        @register_reward("my_length")
        def my_length(completions, **kwargs):
            return [float(len(str(c))) for c in completions]
    """,
    "my_pkg/__init__.py": "",
    "my_pkg/rewards.py": """
        def brevity(completions, max_chars: int = 400, **kwargs):
            return [1.0 for _ in completions]
    """,
    "my_pkg/tools.py": '''
        def lookup(term: str) -> str:
            """Look a term up.

            Args:
                term: The term to look up.
            """
            return term
    ''',
    "my_template.jinja": "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}",
}


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence
    lang: str
    text: str
    file: str | None = None  # ```LANG file=NAME: written to the working folder as NAME (a data file, a plugin)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def first_line(self) -> str:
        return self.text.splitlines()[0] if self.text else ""


@dataclass
class Page:
    path: Path
    work: Path
    env: dict
    written: dict = field(default_factory=dict)  # file name -> block that wrote it and awaits a check
    checks: dict = field(default_factory=dict)  # argv tuple -> (rc, output), each check once per page
    counts: dict = field(default_factory=dict)
    zygote: Zygote | None = None
    worker: tuple | None = None  # (requests, replies, exit status): the page's CLI process, forked from the zygote


# Per-block settings, keyed by (page name, a text the block holds). Each says why.
PAGE_OPTIONS = {
    ("recipes.md", "my_template.jinja"): {
        # vLLM is not installed where the tests run; `check` of a vLLM recipe then (rightly) fails
        "set": ["generation=null"],
    },
    ("recipes.md", "# broken.yaml"): {"checked_below": True},
    ("data.md", "# bad-refill.yaml"): {"checked_below": True},
    ("eval.md", "pass_rate:"): {
        "base": "recipes/gsm8k/qwen2.5-1.5b-instruct.yaml",
        "pass_rates": "recipe.pass_rates.json",  # as `grpo-trl filter` writes it, no prompt scored yet
    },
    ("rewards.md", "name: judge"): {
        # the judge's endpoint: a fake OpenAI-compatible server on a free local port stands for vLLM serve
        "base": "recipes/gsm8k/qwen2.5-1.5b-instruct.yaml",
        "fake_openai": "Qwen/Qwen2.5-7B-Instruct",
    },
    ("tools-and-environments.md", "max_tool_calling_iterations"): {
        "base": "recipes/tools/countdown-calculator-qwen2.5-3b.yaml",
    },
    ("tools-and-environments.md", "factory: countdown"): {
        "base": "recipes/tools/countdown-calculator-qwen2.5-3b.yaml",
    },
    ("vision.md", "# text-model.yaml"): {"checked_below": True},  # refused by check: the console block below
}

# Commands that do not work as the docs say, each a grpo-trl issue to fix: the test asserts the failure as it is
# today, so it fails (and this entry must go) once the cause is fixed. Keyed by (page name, a text of the command).
KNOWN_BUGS: dict[tuple[str, str], tuple[int, str]] = {}


def parse_blocks(path: Path) -> list[Block]:
    blocks, lines, i = [], path.read_text().splitlines(), 0
    while i < len(lines):
        m = re.match(r"^```(\S*)(?:\s+file=(\S+))?\s*$", lines[i])
        if m:
            start, body = i + 1, []
            i += 1
            while not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            blocks.append(Block(path, start, m.group(1), "\n".join(body), m.group(2)))
        i += 1
    return blocks


def makefile_rules() -> dict[str, str]:
    rules, current = {}, None
    for line in (ROOT / "Makefile").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+):(?!=)", line)
        if m:
            current = m.group(1)
            rules[current] = line
        elif current and line.startswith("\t"):
            rules[current] += "\n" + line
    return rules


def default_recipe() -> str:
    return re.search(r"^RECIPE \?= (\S+)", (ROOT / "Makefile").read_text(), re.M).group(1)


WORKER = textwrap.dedent("""
    import contextlib, io, json, os, sys, traceback
    proto = os.fdopen(int(os.environ["DOCS_PROTO_FD"]), "w")
    import grpo_trl
    from grpo_trl.cli import main
    for line in sys.stdin:
        request = json.loads(line)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            try:
                if request["recipe"]:
                    grpo_trl.load_recipe(request["recipe"], overrides=request["sets"])
                rc = main(request["argv"])
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else 1
            except Exception:
                traceback.print_exc()
                rc = 99
        proto.write(json.dumps([rc, buf.getvalue()]) + "\\n")
        proto.flush()
""")


ZYGOTE = textwrap.dedent("""
    import json, os, socket, sys, traceback
    import datasets, peft, transformers  # what the pages' commands import: loaded once, every page process forks
    from trl import GRPOConfig, GRPOTrainer
    import grpo_trl, grpo_trl.cli
    jobs = socket.socket(fileno=int(sys.argv[1]))
    def reap(flags):  # waited for, the page processes' CPU time counts as the zygote's (and so the test's)
        try:
            while os.waitpid(-1, flags)[0]:
                pass
        except ChildProcessError:
            pass
    while True:
        message, fds, _, _ = socket.recv_fds(jobs, 1 << 20, 5)
        reap(0 if not message else os.WNOHANG)
        if not message:  # the test closed its end
            break
        if os.fork():
            for fd in fds:
                os.close(fd)
            continue
        jobs.close()
        job = json.loads(message)
        for fd, new in zip(fds[:3], (0, 1, 2)):
            os.dup2(fd, new)
        status = fds[3]
        os.chdir(job["cwd"])
        os.environ.clear()
        os.environ.update(job["env"], **({"DOCS_PROTO_FD": str(fds[4])} if len(fds) > 4 else {}))
        sys.stdin = open(0, closefd=False)
        sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", closefd=False)
        rc = 0
        try:
            exec(compile(job["code"], "<docs>", "exec"), {"__name__": "__main__"})
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
            if not isinstance(e.code, int | None):
                print(e.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            rc = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os.write(status, str(rc).encode())
        os._exit(0)
""")


class Zygote:
    """One process per pytest worker that imports grpo-trl, TRL and their libraries once (~5 s of CPU); each page's
    processes (its CLI worker, its python blocks) fork from it, with the page's folder, environment and pipes, rather
    than each importing TRL anew. The fake Hub cache is the zygote's (huggingface_hub reads HF_HUB_CACHE at import)."""

    def __init__(self, env: dict):
        self.jobs, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", ZYGOTE, str(theirs.fileno())], env=env, pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        theirs.close()

    def spawn(self, code: str, cwd: Path, env: dict, stdio: tuple[int, int, int], proto: int | None = None) -> int:
        """Forks a process running ``code``; returns the read end of its exit status (EOF when it died)."""
        assert self.proc.poll() is None, "the docs zygote died"
        status, status_w = os.pipe()
        job = json.dumps({"code": code, "cwd": str(cwd), "env": env}).encode()
        socket.send_fds(self.jobs, [job], [*stdio, status_w, *([proto] if proto is not None else [])])
        os.close(status_w)
        return status

    @staticmethod
    def wait(status: int, timeout: float) -> int:
        ready, _, _ = select.select([status], [], [], timeout)
        assert ready, f"a docs process ran past {timeout} s"
        with os.fdopen(status, "rb") as f:
            text = f.read()
        return int(text) if text else -1

    def close(self) -> None:
        self.jobs.close()
        self.proc.wait(timeout=60)


def worker_run(page: Page, argv: list[str], recipe: str | None = None, sets: list[str] = ()) -> tuple[int, str]:
    """Runs the CLI's ``main(argv)`` in the page's worker: one process per page (forked from the zygote), with the
    page's environment and working folder; stdout and stderr of the command are captured together."""
    if page.worker is None:
        requests_r, requests_w = os.pipe()
        replies_r, replies_w = os.pipe()
        null = os.open(os.devnull, os.O_WRONLY)
        status = page.zygote.spawn(WORKER, page.work, page.env, (requests_r, null, null), proto=replies_w)
        for fd in (requests_r, replies_w, null):
            os.close(fd)
        page.worker = (os.fdopen(requests_w, "w"), os.fdopen(replies_r), status)
    requests, replies, _ = page.worker
    requests.write(json.dumps({"argv": argv, "recipe": recipe, "sets": list(sets)}) + "\n")
    requests.flush()
    reply = replies.readline()
    assert reply, f"the worker died running grpo-trl {' '.join(argv)}"
    rc, out = json.loads(reply)
    return rc, out


def grpo(page: Page, argv: list[str], check_rc: int | None = 0) -> tuple[int, str]:
    key = tuple(argv)
    if key not in page.checks:
        page.checks[key] = worker_run(page, argv)
    rc, out = page.checks[key]
    if check_rc is not None:
        assert rc == check_rc, f"grpo-trl {' '.join(argv)}: exit {rc} (expected {check_rc}):\n{out}"
    return rc, out


def check_recipe_file(page: Page, block: Block, path: str, sets: list[str], known_bug=None) -> None:
    """``grpo_trl.load_recipe`` and then ``grpo-trl check`` (the CLI's ``main``) in the page's worker."""
    rc, out = worker_run(page, ["check", path, *[a for s in sets for a in ("--set", s)]], recipe=path, sets=sets)
    page.written.pop(path, None)
    if known_bug:
        assert (rc, known_bug[1] in out) == (known_bug[0], True), f"{block.where}: known bug fixed? {out}"
        return
    assert rc == 0, f"{block.where}: load_recipe + check {path}: exit {rc}:\n{out}"


def run_yaml(page: Page, block: Block, index: int) -> None:
    data = yaml.safe_load(block.text)
    assert isinstance(data, dict), f"{block.where}: a yaml block must be a mapping (a recipe or a fragment of one)"
    matches = [o for (name, needle), o in PAGE_OPTIONS.items() if name == page.path.name and needle in block.text]
    assert len(matches) <= 1, f"{block.where}: more than one PAGE_OPTIONS entry matches"
    options = matches[0] if matches else {}
    named = re.match(r"^# (\S+\.yaml)\s*$", block.first_line)
    name = named.group(1) if named else f"block-{index}.yaml"
    sets = list(options.get("set", []))
    if "model" in data and "data" in data:
        (page.work / name).write_text(block.text + "\n")
    else:
        base = ROOT / options.get("base", DEFAULT_BASE)
        (page.work / name).write_text(f"extends: {base}\n{block.text}\n")
    if "pass_rates" in options:
        (page.work / options["pass_rates"]).write_text('{"rates": {}}')
    if "fake_openai" in options:
        from tests.fake_openai import FakeOpenAI

        with FakeOpenAI(models=[options["fake_openai"]]) as server:
            check_recipe_file(page, block, name, [*sets, f"rewards.0.args.base_url={server.base_url}"])
        return
    if options.get("checked_below"):  # a recipe meant to fail: a later console block shows and checks its errors
        page.written[name] = block
        return
    check_recipe_file(page, block, name, sets, options.get("known_bug"))


def split_commands(text: str) -> list[str]:
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        cmd: list[str] = []
        for w in [*words, "&&"]:
            if w in ("&&", "&"):
                if cmd:
                    out.append(cmd)
                cmd = []
            else:
                cmd.append(w)
    return out


def run_shell_command(page: Page, block: Block, words: list[str], shown: list[str] | None) -> None:
    env_prefix = {}
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        k, v = words.pop(0).split("=", 1)
        env_prefix[k] = v
    words = [default_recipe() if w == "RECIPE" else w for w in words]
    head = words[0]
    page.counts[head] = page.counts.get(head, 0) + 1
    where = f"{block.where}: `{' '.join(words)}`"
    if head == "grpo-trl":
        run_grpo_trl(page, block, words[1:], shown, where)
        return
    assert shown is None, f"{where}: shown output is compared only for grpo-trl commands"
    if head == "make":
        rules = makefile_rules()
        for w in words[1:]:
            if "=" in w:
                var, value = w.split("=", 1)
                if var == "RECIPE":
                    assert (ROOT / value).is_file(), f"{where}: no recipe {value}"
                elif var == "ACCEL":
                    assert (ROOT / f"recipes/accelerate/{value}.yaml").is_file(), f"{where}: no accelerate config"
                else:
                    assert re.search(rf"^{var} \?=", (ROOT / "Makefile").read_text(), re.M), f"{where}: no {var}"
            else:
                assert w in rules, f"{where}: no Makefile target {w!r}"
    elif head == "pip":
        assert words[1] == "install", where
        extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        for w in words[2:]:
            if w.startswith("-"):
                continue
            if w.startswith("."):
                for extra in re.findall(r"\[(.*)\]", w)[0].split(","):
                    assert extra in extras, f"{where}: no extra {extra!r} in pyproject.toml"
            elif "/" in w or "*" in w:
                prefix = next((p for p in BUILT if w.startswith(p)), None)
                assert prefix, f"{where}: {w} is not a path a make target writes"
                rule = makefile_rules()[BUILT[prefix]]
                assert prefix.rstrip("/") in rule, f"{where}: make {BUILT[prefix]} does not write {prefix}"
            else:
                from packaging.requirements import Requirement

                Requirement(w)
    elif head == "export":
        for w in words[1:]:
            k, v = w.split("=", 1)
            page.env[k] = v.replace("$PWD", str(page.work))
    elif head == "python":
        assert words[1] == "-m", where
        module = words[2]
        assert (ROOT / (module.replace(".", "/") + ".py")).is_file(), f"{where}: no module {module}"
    elif head == "accelerate":
        assert words[1] == "launch", where
        args, i, config, nproc = words[2:], 0, None, None
        while args[i] != "-m":
            if args[i] == "--config_file":
                config = args[i + 1]
            elif args[i] == "--num_processes":
                nproc = args[i + 1]
            i += 2 if args[i] in ("--config_file", "--num_processes") else 1
        assert args[i + 1] == "grpo_trl.train", f"{where}: the entry point is -m grpo_trl.train"
        assert config and (ROOT / config).is_file(), f"{where}: no accelerate config {config}"
        rest = args[i + 2 :]
        nproc = nproc or str(yaml.safe_load((ROOT / config).read_text()).get("num_processes", 1))
        argv = ["check", *rest, "--world-size", nproc]
        bugs = [b for (name, text), b in KNOWN_BUGS.items() if name == page.path.name and text in " ".join(words)]
        if bugs:
            rc, out = grpo(page, argv, check_rc=None)
            assert (rc, bugs[0][1] in out) == (bugs[0][0], True), f"{where}: known bug fixed? {out}"
        else:
            grpo(page, argv)
    elif head in EXTERNAL:
        pass  # named for the reader only, see EXTERNAL
    else:
        pytest.fail(f"{where}: no rule for the command {head!r} (see this test's docstring)")


def run_grpo_trl(page: Page, block: Block, argv: list[str], shown: list[str] | None, where: str) -> None:
    sub = argv[0]
    if sub in ("check", "schema", "import", "data", "rewards", "report", "--help", "serve"):
        if sub == "serve" and "--dry-run" not in argv:
            argv = [*argv, "--dry-run"]
        if sub == "check":
            for a in argv[1:]:
                page.written.pop(a, None)
        expect = 1 if shown and any(line.startswith("error:") for line in shown) else 0
        _, out = grpo(page, argv, check_rc=expect)
        if shown is not None:
            compare_output(where, shown, out)
    elif sub in ("train", "eval") and page.path.name in RUN_PAGES:  # a tiny CPU run: done for real
        assert shown is None, where
        grpo(page, argv)
    elif sub == "train":
        assert shown is None, where
        grpo(page, ["check", *[a for a in argv[1:] if a not in ("--resume", "--overwrite", "--verbose")]])
    elif sub == "export":  # needs a trained LoRA run: the flags are checked against `grpo-trl export --help`
        assert shown is None, where
        _, help_text = grpo(page, [sub, "--help"])
        for flag in [a.split("=")[0] for a in argv[1:] if a.startswith("--")]:
            assert re.search(rf"{re.escape(flag)}\b", help_text), f"{where}: {flag} is not a `grpo-trl export` option"
    elif sub in ("eval", "filter"):
        assert shown is None, where
        recipe, sets, flags, i = argv[1], [], [], 2
        while i < len(argv):
            if argv[i] == "--set":
                sets += ["--set", argv[i + 1]]
                i += 2
                continue
            if argv[i].startswith("--"):
                flags.append(argv[i].split("=")[0])
            i += 1
        flags += [recipe] if recipe.startswith("--") else []
        if not recipe.startswith("--"):  # `eval --benchmark NAME` takes no recipe
            grpo(page, ["check", recipe, *sets])
        _, help_text = grpo(page, [sub, "--help"])
        for flag in flags:
            assert re.search(rf"{re.escape(flag)}\b", help_text), f"{where}: {flag} is not a `grpo-trl {sub}` option"
    else:
        pytest.fail(f"{where}: no rule for `grpo-trl {sub}` (see this test's docstring)")


def compare_output(where: str, shown: list[str], out: str) -> None:
    actual = [line.rstrip() for line in out.rstrip("\n").splitlines()]
    shown = [line.rstrip() for line in shown]
    if "..." not in shown:
        assert actual == shown, f"{where}: output differs:\n" + "\n".join(actual)
        return
    pos, chunks, chunk = 0, [], []
    for line in [*shown, "..."]:
        if line == "...":
            chunks.append(chunk) if chunk else None
            chunk = []
        else:
            chunk.append(line)
    for chunk in chunks:
        starts = range(pos, len(actual) - len(chunk) + 1)
        found = next((i for i in starts if actual[i : i + len(chunk)] == chunk), None)
        assert found is not None, (
            f"{where}: these lines are not in the output:\n"
            + "\n".join(chunk)
            + ("\n--- output:\n" + "\n".join(actual))
        )
        pos = found + len(chunk)


def run_shell(page: Page, block: Block) -> None:
    if block.lang != "console":
        for words in split_commands(block.text):
            run_shell_command(page, block, words, None)
        return
    items: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            items.append((line[2:], []))
        else:
            assert items, f"{block.where}: a console block starts with a `$ ` command"
            items[-1][1].append(line)
    for command, shown in items:
        (words,) = split_commands(command)
        run_shell_command(page, block, words, shown or None)


RUNNER = textwrap.dedent("""
    import doctest, json, os, sys, traceback
    blocks = json.load(sys.stdin)
    ns = {"__name__": "__main__"}
    for i, (where, lang, text) in enumerate(blocks):
        here = os.path.abspath(f"py-{i}")
        os.makedirs(here)
        for name in ("recipes", "examples", "bench"):
            os.symlink(os.path.join(os.environ["DOCS_ROOT"], name), os.path.join(here, name))
        os.chdir(here)
        try:
            if lang == "python":
                exec(compile(text, where, "exec"), ns)
            else:
                test = doctest.DocTestParser().get_doctest(text, ns, where, where, 0)
                runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
                runner.run(test, clear_globs=False)
                if runner.failures:
                    sys.exit(f"{where}: {runner.failures} doctest failure(s)")
        except BaseException:
            traceback.print_exc()
            sys.exit(f"{where}: failed")
        os.chdir("..")
        print(f"ok {where}", flush=True)
""")


def run_python(page: Page, blocks: list[Block]) -> None:
    files = {name: page.work.parent / f"python-blocks.{name}" for name in ("json", "out", "err")}
    files["json"].write_text(json.dumps([[b.where, b.lang, b.text] for b in blocks]))
    stdio = (
        os.open(files["json"], os.O_RDONLY),
        *(os.open(files[n], os.O_WRONLY | os.O_CREAT) for n in ("out", "err")),
    )
    status = page.zygote.spawn(RUNNER, page.work, {**page.env, "DOCS_ROOT": str(ROOT)}, stdio)
    for fd in stdio:
        os.close(fd)
    rc = Zygote.wait(status, 600)
    out, err = files["out"].read_text(), files["err"].read_text()
    assert rc == 0, f"python blocks of {page.path.name}:\n{out}\n{err}"
    assert out.count("ok ") == len(blocks), out


def fake_hub_cache(hub: Path) -> None:
    """config.json of the Hub models whose config a `check` in the docs reads (the memory plan, reward models)."""
    from tests.check.test_memory import QWEN25_05B

    configs = {
        "Qwen/Qwen2.5-0.5B-Instruct": QWEN25_05B,
        "OpenAssistant/reward-model-deberta-v3-large-v2": {
            "model_type": "deberta-v2",
            "architectures": ["DebertaV2ForSequenceClassification"],
            "hidden_size": 1024,
            "num_hidden_layers": 24,
            "num_attention_heads": 16,
            "intermediate_size": 4096,
            "vocab_size": 128100,
            "id2label": {"0": "LABEL_0"},
            "label2id": {"LABEL_0": 0},
        },
    }
    for repo, config in configs.items():
        d = hub / ("models--" + repo.replace("/", "--"))
        (d / "refs").mkdir(parents=True)
        (d / "refs" / "main").write_text("0" * 40)
        (d / "snapshots" / ("0" * 40)).mkdir(parents=True)
        (d / "snapshots" / ("0" * 40) / "config.json").write_text(json.dumps(config))


def local_reward_model(work: Path) -> None:
    """``./my-rm`` and ``./my-rm-tokenizer`` of the reward-model example: a tiny offline classifier."""
    from grpo_trl.testing import build_tiny_reward_model

    build_tiny_reward_model(work / "my-rm")
    (work / "my-rm-tokenizer").symlink_to(work / "my-rm")


def page_params():
    # slow: each page runs its commands in a worker process (forked, TRL imported already; quickstart and python-api
    # train the tiny model), 5-100 s a page: make test runs them, make test-fast leaves them out
    for path in PAGES:
        yield pytest.param(path, id=str(path.relative_to(ROOT)), marks=[pytest.mark.slow])


KNOWN = {"python", "pycon", "yaml", "bash", "sh", "console", "text"}


def test_every_block_has_a_rule():
    """A fence in another language (or none) fails here rather than being skipped."""
    bad = [f"{b.where}: ```{b.lang}" for p in PAGES for b in parse_blocks(p) if b.lang not in KNOWN and not b.file]
    assert not bad, "blocks this test has no rule for (use ```text for output):\n" + "\n".join(bad)


def test_docs_pages_linked():
    """docs/index.md lists every page, and every relative link in README and docs points at a file that exists."""
    index = (ROOT / "docs" / "index.md").read_text()
    for page in (ROOT / "docs").glob("*.md"):
        if page.name != "index.md":
            assert f"]({page.name})" in index, f"docs/index.md does not link {page.name}"
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)}: broken link {target}"


BASE_ENV = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "OPENAI_API_KEY": "not-a-key", "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def zygote(tmp_path_factory):
    hub = tmp_path_factory.mktemp("docs-hub")
    fake_hub_cache(hub)
    started = Zygote({**os.environ, **BASE_ENV, "HF_HUB_CACHE": str(hub)})
    yield started, hub
    started.close()


@pytest.mark.parametrize("path", page_params())
def test_page_blocks(path: Path, tmp_path: Path, zygote):
    blocks = [b for b in parse_blocks(path) if b.lang != "text"]
    work = tmp_path / "work"
    work.mkdir()
    for name in LINKED:
        (work / name).symlink_to(ROOT / name)
    for name, text in FIXTURES.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(textwrap.dedent(text).lstrip())
    if "./my-rm" in path.read_text():
        local_reward_model(work)
    forks, hub = zygote
    env = {**os.environ, **BASE_ENV, "HF_HUB_CACHE": str(hub), "GRPO_TRL_CACHE": str(tmp_path / "cache")}
    page = Page(path, work, env, zygote=forks)
    python = [b for b in blocks if b.lang in ("python", "pycon") and not b.file]
    try:
        for i, block in enumerate(blocks):
            if block.file:  # a file the reader writes (data, a plugin): written, used by the blocks after it
                (work / block.file).write_text(block.text + "\n")
            elif block.lang == "yaml":
                run_yaml(page, block, i)
            elif block.lang in ("bash", "sh", "console"):
                run_shell(page, block)
    finally:
        if page.worker is not None:
            requests, replies, status = page.worker
            requests.close()
            Zygote.wait(status, 60)
            replies.close()
    if python:
        run_python(page, python)
    assert not page.written, f"files written for a later check that no block checks: {sorted(page.written)}"
