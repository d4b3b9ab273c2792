"""``grpo-trl``: every subcommand (``parser.py`` declares them, ``commands.py`` runs them). Expected failures are
``error:`` lines and exit 1; a server not reached is the network's (exit 1); anything else is a bug (exit 70).

    grpo-trl check recipes/demo/tiny-cpu.yaml; grpo-trl train recipes/demo/tiny-cpu.yaml; grpo-trl report outputs/...
"""

from __future__ import annotations

import argparse  # noqa: F401 - tests reach argparse.ArgumentParser through this module
import errno
import logging
import sys
import traceback
import warnings

from grpo_trl.cli.parser import build_parser
from grpo_trl.cli.train import print_summary, run_cli
from grpo_trl.errors import GrpoTrlError, format_error_lines, one_line, redact_record

__all__ = ["BUG_EXIT", "build_parser", "main", "print_summary", "run_cli", "train_main"]

BUG_EXIT = 70  # EX_SOFTWARE: an exception grpo-trl did not expect, i.e. a bug
# an OSError with one of these is about the path it names (the user's input), never a bug
PATH_ERRNOS = {errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM, errno.EROFS}


def main(argv: list[str] | None = None) -> int:
    """Run a command; as the program (``argv`` None) Ctrl-C is answered ("interrupted", 130) and a thread or process
    user code left running cannot keep it alive (``grpo_trl.rewards.stray_threads``)."""
    return _program(sys.argv[1:]) if argv is None else _main(list(argv))


def train_main(argv: list[str] | None = None) -> int:
    """``python -m grpo_trl.train`` (``accelerate launch -m grpo_trl.train RECIPE``): the ``train`` command."""
    return _program(["train", *sys.argv[1:]]) if argv is None else _main(["train", *argv])


def _program(argv: list[str]) -> int:
    import signal

    from grpo_trl.rewards.stray_threads import exit_if_stray_threads

    signal.signal(signal.SIGINT, signal.default_int_handler)  # from here on Ctrl-C is KeyboardInterrupt
    try:
        code = _main(argv)
    except KeyboardInterrupt:  # while the parser is built (subcommand modules import)
        print("interrupted", file=sys.stderr)
        code = 130
    exit_if_stray_threads(code, everything=True)
    return code


def unreachable(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what caused it) is a connection failure: no route, no name, refused, timed out (also
    httpx's ``TransportError``, huggingface_hub's HTTP client)."""
    while exc is not None and not isinstance(exc, (ConnectionError, TimeoutError)):
        if any(c.__name__ == "TransportError" and c.__module__.startswith("httpx") for c in type(exc).__mro__):
            return True
        exc = exc.__cause__ or exc.__context__
    return exc is not None


def _main(argv: list[str]) -> int:
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    debug = "--debug" in argv
    try:
        args = build_parser().parse_args([a for a in argv if a != "--debug"])
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
        print("\n".join(format_error_lines(exc, file=getattr(args, "recipe", "") or "")), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - a bug: say so in one line, the traceback only when asked
        if isinstance(exc, RuntimeError) and str(exc).startswith("Symlink loop from "):  # Path.resolve() < 3.13
            exc = OSError(errno.ELOOP, "Too many levels of symbolic links", str(exc)[18:].strip("'"))
        if isinstance(exc, OSError) and exc.errno in PATH_ERRNOS and exc.filename:
            name = str(exc.filename)  # a path the OS refuses by its name or place: the user's input
            shown = name if len(name) <= 80 else f"{name[:60]}... ({len(name)} characters)"
            print(f"error: {one_line(shown)}: {exc.strerror} (name another path)", file=sys.stderr)
            return 1
        what = f"({type(exc).__name__}: {one_line(str(exc))[:200]})"
        if unreachable(exc):  # the Hub (push_to_hub, a download) or a server the recipe names
            print(
                f"error: a server could not be reached {what}; run where the Hugging Face Hub (or the server the "
                "recipe names) answers, or use local copies",
                file=sys.stderr,
            )
            return 1
        if debug:
            traceback.print_exception(exc)
        print(
            f"grpo-trl: internal error {what}. This is a bug in grpo-trl: please report it with the command and the "
            "recipe" + ("" if debug else " (add --debug for the traceback)"),
            file=sys.stderr,
        )
        return BUG_EXIT
