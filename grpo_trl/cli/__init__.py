"""``grpo-trl``: check, train, rewards, data, eval, filter, report, export, serve, schema, import.

``parser.py`` declares every subcommand and flag, ``commands.py`` runs them; this module is the program: expected
failures become ``error:`` lines (exit 1), anything else one line naming a bug (exit 70).

Example::

    grpo-trl check recipes/demo/tiny-cpu.yaml
    grpo-trl train recipes/demo/tiny-cpu.yaml --set trainer.max_steps=50
    grpo-trl report outputs/tiny-cpu
"""

from __future__ import annotations

import argparse
import errno
import logging
import sys
import traceback
import warnings

from grpo_trl.cli.commands import print_summary, run_cli
from grpo_trl.cli.parser import add_train_arguments, build_parser
from grpo_trl.errors import GrpoTrlError, format_error_lines, one_line, redact_record

__all__ = ["BUG_EXIT", "build_parser", "main", "print_summary", "run_cli", "train_main"]

BUG_EXIT = 70  # EX_SOFTWARE: an exception grpo-trl did not expect, i.e. a bug
# an OSError naming a path with one of these is about that path (its name, a link loop, a file used as a folder,
# permissions, a read-only or full disk), never a bug
PATH_ERRNOS = {errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM, errno.EROFS}


def train_main(argv: list[str] | None = None) -> int:
    """``python -m grpo_trl.train`` (``accelerate launch -m grpo_trl.train RECIPE``): the ``train`` command alone."""
    parser = argparse.ArgumentParser(prog="grpo-trl train", description="Train a model with GRPO from a YAML recipe.")
    code = run_cli(add_train_arguments(parser).parse_args(argv))
    if argv is None:  # the program (accelerate launch -m grpo_trl.train): nothing left running keeps it alive
        from grpo_trl.rewards.stray_threads import exit_if_stray_threads

        exit_if_stray_threads(code, everything=True)
    return code


def main(argv: list[str] | None = None) -> int:
    """Run a command. Expected failures: ``error:`` lines and exit 1. Anything else is a bug: one line, exit 70.

    Run as the program (``argv`` None), it ends even when user code left a non-daemon thread or process running:
    ``grace`` seconds for them, then a warning and the exit (``grpo_trl.rewards.stray_threads``).
    """
    if argv is None:  # from here on Ctrl-C is KeyboardInterrupt, answered below ("interrupted", 130)
        import signal

        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = _main(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt:  # while the parser is built (subcommand modules import)
        print("interrupted", file=sys.stderr)
        code = 130
    if argv is None:
        from grpo_trl.rewards.stray_threads import exit_if_stray_threads

        exit_if_stray_threads(code, everything=True)
    return code


def unreachable(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what caused it) is a connection failure: no route, no name, refused, timed out."""
    import importlib

    kinds: tuple[type, ...] = (ConnectionError, TimeoutError)
    for client in ("httpx2", "httpx"):  # huggingface_hub's HTTP client (httpx2 in 2.x): its network failures
        try:
            kinds += (importlib.import_module(client).TransportError,)
        except (ImportError, AttributeError):
            pass
    while exc is not None:
        if isinstance(exc, kinds):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _main(argv: list[str]) -> int:
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error already printed (1)
        return exc.code if isinstance(exc.code, int) else 1
    args.extra = extra
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:  # the one redaction, on every log line
        handler.addFilter(redact_record)
    warnings.filterwarnings("ignore", category=FutureWarning)  # deprecation chatter from transformers/TRL
    try:
        return args.func(args)
    except GrpoTrlError as exc:
        for line in format_error_lines(exc, file=getattr(args, "recipe", "") or ""):
            print(line, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (OSError, RuntimeError) as exc:
        if isinstance(exc, RuntimeError) and str(exc).startswith("Symlink loop from "):  # Path.resolve() < 3.13
            exc = OSError(errno.ELOOP, "Too many levels of symbolic links", str(exc)[18:].strip("'"))
        if not isinstance(exc, OSError) or exc.errno not in PATH_ERRNOS or not exc.filename:
            return _unexpected(exc, debug)
        name = str(exc.filename)  # a path the OS refuses by its name or place: the user's input, not a bug
        shown = name if len(name) <= 80 else f"{name[:60]}... ({len(name)} characters)"
        print(f"error: {one_line(shown)}: {exc.strerror} (name another path)", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a bug: say so in one line, the traceback only when asked
        return _unexpected(exc, debug)


def _unexpected(exc: BaseException, debug: bool) -> int:
    """A server not reached is the network's (one ``error:`` line, exit 1); anything else is a bug (exit 70)."""
    if unreachable(exc):  # the Hub (push_to_hub, a download) or a server the recipe names
        print(
            f"error: a server could not be reached ({type(exc).__name__}: {one_line(str(exc))[:200]}); run where "
            "the Hugging Face Hub (or the server the recipe names) answers, or use local copies",
            file=sys.stderr,
        )
        return 1
    if debug:
        traceback.print_exception(exc)
    print(
        f"grpo-trl: internal error ({type(exc).__name__}: {one_line(str(exc))[:200]}). This is a bug in grpo-trl: "
        "please report it with the command and the recipe" + ("" if debug else " (add --debug for the traceback)"),
        file=sys.stderr,
    )
    return BUG_EXIT
