"""One base error, one ``Problem`` type, one did-you-mean helper for the whole package.

Every failure a user can cause (a recipe, a data file, a reward, a generation server) is a ``GrpoTrlError`` that
carries ``Problem`` s: *where* (file and dotted key), *what* is wrong and *how to fix it*. The CLI prints each as one
``error: <file>: <key>: <what> (<fix>)`` line and exits 1; anything else that escapes is a bug.

Example:
    >>> p = Problem("r.yaml", "trainer.learning_rat", "not a trl.GRPOConfig field", suggest_fix("learning_rat",
    ...     ["learning_rate", "lr_scheduler_type"]))
    >>> str(p)
    "r.yaml: trainer.learning_rat: not a trl.GRPOConfig field (did you mean 'learning_rate'?)"
    >>> suggest("format", ["think_format", "xml_format", "countdown"])
    " (did you mean 'think_format'?)"
    >>> str(GrpoTrlError("data file 'x.jsonl' does not exist"))
    "data file 'x.jsonl' does not exist"
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

# Names users carry over from older grpo-trl versions or other tools: old -> new. Consulted by ``suggest`` before the
# fuzzy match, when ``new`` is among the choices (or is a dotted key path, valid anywhere). TRL's and open-r1's names
# are not repeated here: ``grpo_trl.tables`` (the one table ``grpo-trl import`` translates with, a floor above) puts
# them in ``PEER_RENAMES`` when it is imported, as the package always does. Others come from ``add_rename``.
PEER_RENAMES: dict[str, str] = {}
RENAMES: dict[str, str] = {}


def add_rename(old: str, new: str) -> None:
    """Teach ``suggest`` that ``old`` is now called ``new`` (``new`` may be a dotted key like ``model.name``)."""
    RENAMES[old] = new


def renames() -> dict[str, str]:
    """Every rename ``suggest`` knows: the importer's peer names, then those added with ``add_rename``.

    >>> renames()["model_name_or_path"], renames()["no_cuda"]
    ('model.name', 'use_cpu')
    """
    return {**PEER_RENAMES, **RENAMES}


def closest(word: object, choices: Iterable[object], cutoff: float = 0.6) -> str | None:
    """The known rename or the closest of ``choices`` to ``word`` (``None`` when nothing is close).

    >>> closest("learnin_rate", ["learning_rate", "seed"])
    'learning_rate'
    >>> closest("model_name_or_path", ["name", "dtype"])
    'model.name'
    """
    names = [str(c) for c in choices]
    text = str(word)
    renamed = renames().get(text)
    if renamed is not None and (renamed in names or "." in renamed):
        return renamed
    close = difflib.get_close_matches(text, names, n=1, cutoff=cutoff)
    return close[0] if close else None


def suggest_fix(word: object, choices: Iterable[object], cutoff: float = 0.6) -> str:
    """``did you mean 'x'?`` for the closest choice, or ``""``: the ``fix`` of a ``Problem``."""
    match = closest(word, choices, cutoff)
    return f"did you mean {match!r}?" if match else ""


def suggest(word: object, choices: Iterable[object], cutoff: float = 0.6) -> str:
    """`` (did you mean 'x'?)`` to append to a message, or ``""``. The one did-you-mean helper (see ``closest``)."""
    fix = suggest_fix(word, choices, cutoff)
    return f" ({fix})" if fix else ""


@dataclass(frozen=True)
class Problem:
    """One thing wrong: ``file`` and dotted ``key`` say where, ``message`` what, ``fix`` (optional) what to do."""

    file: str
    key: str
    message: str
    fix: str = ""

    def __str__(self) -> str:
        where = ": ".join(part for part in (self.file, self.key) if part)
        text = f"{self.message} ({self.fix})" if self.fix else self.message
        return f"{where}: {text}" if where else text

    @property
    def text(self) -> str:
        """``message (fix)``, without the location."""
        return f"{self.message} ({self.fix})" if self.fix else self.message


class GrpoTrlError(ValueError):
    """The base of every expected failure. ``problems`` lists each issue (file, key, message, fix).

    Built from a list of ``Problem`` s, or from one message (``file``/``key``/``fix`` optional); ``str()`` gives one
    line per problem.
    """

    def __init__(
        self, problems: list[Problem] | str | None = None, *, file: str = "", key: str = "", fix: str = ""
    ) -> None:
        if isinstance(problems, str) or problems is None:
            problems = [Problem(file, key, problems or type(self).__name__, fix)]
        self.problems: list[Problem] = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    def located(self, file: str, key: str = "") -> list[Problem]:
        """The problems, with ``file`` (and ``key``) filled in where the raiser did not know them."""
        return located(self.problems, file, key)


def located(problems: Iterable[Problem], file: str, key: str = "") -> list[Problem]:
    """``problems`` with ``file`` (and ``key``) filled in where the finder did not know them: a capability's check
    returns ``Problem("", "tools.0.name", ...)``, and the caller knows the recipe's file."""
    return [replace(p, file=p.file or file, key=p.key or key) for p in problems]


class RecipeError(GrpoTrlError):
    """A recipe that cannot run. ``problems`` lists every issue found, one line each."""


class DataError(GrpoTrlError):
    """A dataset could not be built. The message names the column, file or dataset and the fix."""


class RewardError(GrpoTrlError):
    """A reward could not be found, registered or configured. The message says what to change."""


class GenerationError(RecipeError):
    """vLLM is missing or its server cannot be reached."""


def format_error_lines(exc: GrpoTrlError, file: str = "", key: str = "") -> list[str]:
    """``error: ...`` lines for an expected failure (``file``/``key`` fill in what the raiser did not know)."""
    return [f"error: {one_line(str(p))}" for p in exc.located(file, key)]


def one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped and secrets redacted, so one problem stays one
    line and shows no token or password."""
    return redact("".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in text))


# ------------------------------------------------------------------------------------------------ the one redaction
HIDDEN = "<redacted>"
# keys whose values are secrets (hub_token, api_key, password...; not max_new_tokens or tokenizer)
SECRET_KEY = re.compile(
    r"(^|_)(\w*token|secrets?|passwords?|passwd|api_?key|access_?key|private_?key|secret_?key|credentials?)$", re.I
)
SECRET_TEXT = [
    (re.compile(r"\b(hf_|sk-|sk_|ghp_|gho_|github_pat_|xox[abpr]-|glpat-|AKIA)[A-Za-z0-9_\-]{8,}"), r"\1" + HIDDEN),
    (re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://)[^/\s:@'\"]*:[^/\s@'\"]*@"), r"\1" + HIDDEN + "@"),  # user:password@
    (re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1" + HIDDEN),
    (re.compile(r"(?i)\b(\w*(?:token|secret|password|passwd|api_?key)=)(?!<redacted>)[^\s'\",;&]+"), r"\1" + HIDDEN),
]


def redact_record(record: logging.LogRecord) -> bool:
    """A ``logging`` filter (for handlers): the record's message, arguments merged, redacted. Always keeps it."""
    message = record.getMessage()
    hidden = redact(message)
    if hidden != message:
        record.msg, record.args = hidden, None
    return True


def is_secret_key(key: object) -> bool:
    """A mapping key whose value is a secret.

    >>> [k for k in ("hub_token", "api_key", "password", "max_new_tokens", "tokenizer", "seed") if is_secret_key(k)]
    ['hub_token', 'api_key', 'password']
    """
    return bool(SECRET_KEY.search(str(key)))


# a token as issued (hf_ + 34 letters and digits...), not a name that merely starts so (outputs/hf_baseline_run)
ISSUED_TOKEN = re.compile(
    r"\b(hf_[A-Za-z0-9]{30,}|sk-(?=[\w-]*\d)(?=[\w-]*[A-Z])[\w-]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,}|glpat-[\w-]{20,}"
    r"|xox[abpr]-[\w-]{10,}|AKIA[A-Z0-9]{16})"
)


def _secret_text(value: str) -> bool:
    """An issued token, or a password, bearer or ``token=`` the redaction hides, in ``value``."""
    return bool(ISSUED_TOKEN.search(value)) or any(p.search(value) for p, _ in SECRET_TEXT[1:])


def config_secrets(config: Any, file: str = "") -> list[Problem]:
    """A problem per field of a dataclass config (``trl.GRPOConfig``) holding a secret: a key named like one, or a
    value ``redact`` would hide (a URL's password, a token in free text). transformers saves the whole config in
    clear (every checkpoint's ``training_args.bin``) and sends it to trackers, so such a config is refused.

    >>> from dataclasses import make_dataclass
    >>> [p.key for p in config_secrets(make_dataclass("C", ["run_name", "hub_token", "seed"])("http://u:pw@h", "", 1))]
    ['trainer.run_name']
    """
    import dataclasses

    found = []
    for field in dataclasses.fields(config) if dataclasses.is_dataclass(config) else ():
        value = getattr(config, field.name, None)
        if value in (None, "", False) or not isinstance(value, (str, dict, list, tuple)):
            continue
        text = isinstance(value, str)
        if is_secret_key(field.name) or (_secret_text(value) if text else redact(value) != value):
            why = "a secret here is saved in clear in every checkpoint's training_args.bin and sent to trackers"
            fix = "put it in the environment: HF_TOKEN (huggingface_hub reads it); a server's key: its api_key_env"
            found.append(Problem(file, f"trainer.{field.name}", why, fix))
    return found


def redact(value: Any) -> Any:
    """``value`` with every secret hidden: tokens (``hf_...``, ``sk-...``), ``user:password@`` in URLs,
    ``token=...`` in text, and in mappings the values of keys named like secrets (``is_secret_key``).

    >>> redact("https://bob:hunter2@judge.example/v1 with hf_abcdefghijkl")
    'https://<redacted>@judge.example/v1 with hf_<redacted>'
    >>> redact({"trainer": {"hub_token": "x", "seed": 1}})
    {'trainer': {'hub_token': '<redacted>', 'seed': 1}}
    """
    if isinstance(value, str):
        for pattern, hidden in SECRET_TEXT:
            value = pattern.sub(hidden, value)
        return value
    if isinstance(value, dict):
        return {k: HIDDEN if is_secret_key(k) and v not in (None, "") else redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(v) for v in value)
    return value
