"""One base error, one ``Problem`` type, one did-you-mean helper and the one redaction of secrets. Every failure a
user can cause is a ``GrpoTrlError`` holding ``Problem`` s (file, dotted key, what, fix); the CLI prints each as one
``error: <file>: <key>: <what> (<fix>)`` line and exits 1.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

# old name -> new (may be a dotted key), filled by grpo_trl.tables (TRL's, open-r1's); ``closest`` consults it first.
RENAMES: dict[str, str] = {}


def closest(word: object, choices: Iterable[object], cutoff: float = 0.6) -> str | None:
    """The known rename or the closest of ``choices`` to ``word``, else None."""
    names, text = [str(c) for c in choices], str(word)
    if (renamed := RENAMES.get(text)) is not None and (renamed in names or "." in renamed):
        return renamed
    close = difflib.get_close_matches(text, names, n=1, cutoff=cutoff)
    return close[0] if close else None


def suggest(word: object, choices: Iterable[object], cutoff: float = 0.6) -> str:
    """`` (did you mean 'x'?)`` to append to a message, or ``""``.

    >>> suggest("format", ["think_format", "xml_format", "countdown"])
    " (did you mean 'think_format'?)"
    """
    return f" (did you mean {match!r}?)" if (match := closest(word, choices, cutoff)) else ""


def shown(name: object) -> str:
    """A user-given name (column, key, reward, file) as an error line shows it: as it is, unless it is empty, starts
    or ends blank or holds what does not print (``\\n``, ``\\x1b``...): then quoted, so it is never invisible.

    >>> [shown(n) for n in ("answer", "my col", "", " ", "a\\nb")]
    ['answer', 'my col', "''", "' '", "'a\\\\nb'"]
    """
    text = str(name)
    return text if text and text.strip() == text and text.isprintable() else repr(text)


def names(values: Iterable[object]) -> str:
    """``values`` as a comma-separated list of ``shown`` names."""
    return ", ".join(map(shown, values))


@dataclass(frozen=True)
class Problem:
    """One thing wrong: ``file`` and dotted ``key`` say where, ``message`` what, ``fix`` what to do."""

    file: str
    key: str
    message: str
    fix: str = ""

    @property
    def text(self) -> str:
        """``message (fix)``, without the location."""
        return f"{self.message} ({self.fix})" if self.fix else self.message

    def __str__(self) -> str:
        key = ".".join(map(shown, self.key.split("."))) if self.key else ""  # trainer.'' for a key named ''
        where = ": ".join(part for part in (self.file and shown(self.file), key) if part)
        return f"{where}: {self.text}" if where else self.text


class GrpoTrlError(ValueError):
    """The base of every expected failure: a list of ``Problem`` s, or one message (``file``/``key``/``fix``)."""

    def __init__(
        self, problems: list[Problem] | str | None = None, *, file: str = "", key: str = "", fix: str = ""
    ) -> None:
        if isinstance(problems, str) or problems is None:
            problems = [Problem(file, key, problems or type(self).__name__, fix)]
        self.problems: list[Problem] = list(problems)
        super().__init__(redact("\n".join(str(p) for p in self.problems)))  # str(exc) shows no secret either

    def located(self, file: str, key: str = "") -> list[Problem]:
        return located(self.problems, file, key)


def located(problems: Iterable[Problem], file: str, key: str = "") -> list[Problem]:
    """``problems`` with ``file`` (and ``key``, unless the message opens with it: ``data.eval_size: ...``) filled in
    where the finder did not know them."""
    named = re.compile(rf"{re.escape(key)}(\.[\w.-]+)?: ")
    return [replace(p, file=p.file or file, key=p.key or ("" if named.match(p.message) else key)) for p in problems]


class RecipeError(GrpoTrlError):
    """A recipe that cannot run."""


class DataError(GrpoTrlError):
    """A dataset could not be built."""


class RewardError(GrpoTrlError):
    """A reward could not be found, registered or configured."""


class GenerationError(RecipeError):
    """vLLM is missing or its server cannot be reached."""


def format_error_lines(exc: GrpoTrlError, file: str = "", key: str = "") -> list[str]:
    """``error: ...`` lines for an expected failure."""
    return [f"error: {one_line(str(p))}" for p in exc.located(file, key)]


def one_line(text: str) -> str:
    """``text`` with control characters escaped and secrets redacted: one problem stays one line."""
    return redact("".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in text))


# ------------------------------------------------------------------------------------------------ the one redaction
HIDDEN = "<redacted>"
# THE secret-key rule, on the name case-folded with '-', '.', ' ' as '_': a last word token (hub_token, access-token;
# not a tokenizer's pad_token), a key after a word that makes it one (api_key, x-api-key, hmac_key; not answer_key,
# a field of the data), secret, password, authorization, cookie, credentials; a bool or number under one is no secret
SECRET_KEY = re.compile(
    r"(^|_)(\w*token|(access|auth|api|hf|hub|id|refresh|bearer)_tokens|\w*secrets?|passwords?|passwd|passphrase"
    r"|authorization|cookies?|credentials?|((api|access|auth|secret|private|public|hmac|client|signing|encryption"
    r"|master|license|session|ssh|service|account|app|e2b|hf|hub|openai|anthropic|wandb|aws|azure|gcp)_?keys?))$"
)
TOKENIZER_TOKEN = re.compile(r"(^|_)(pad|eos|bos|unk|mask|sep|cls|stop|end|start|think|answer|image|video|audio|vision"
                             r"|tool|reasoning)_token$")  # fmt: skip
SECRET_TEXT = [
    (re.compile(r"\b(hf_|sk-|sk_|ghp_|gho_|github_pat_|xox[abpr]-|glpat-|AKIA)[A-Za-z0-9_\-]{8,}"), r"\1" + HIDDEN),
    (
        re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://)[^/\s:'\"]*:[^/\s'\"]*@"),
        r"\1" + HIDDEN + "@",
    ),  # user:pw@, to the last @ before the path
    (re.compile(r"(?i)(\bbearer\s+)(?=[\w.~+/=-]*\d)[A-Za-z0-9._~+/=-]{8,}"), r"\1" + HIDDEN),  # a token has a digit
    (re.compile(r"(?i)(\bauthorization['\"]?\s*[:=]\s*['\"]?(?:basic|bearer)\s+)[^\s'\",;}]+"), r"\1" + HIDDEN),
]
KEY_VALUES = [  # token=..., x-api-key='...'; a mapping's repr or JSON: 'hub_token': '...', "api_key": "..."
    re.compile(r"\b(?P<head>(?P<name>[A-Za-z_][\w.-]*)=['\"]?)(?!<redacted>)[^\s'\",;&]+"),
    re.compile(r"(?P<head>(?P<q>['\"])(?P<name>[A-Za-z_][\w.-]*)(?P=q)\s*:\s*['\"]?)(?!<redacted>)[^\s'\",;&}]+"),
]
SECRET_FIX = "put it in the environment: HF_TOKEN (huggingface_hub reads it) for the Hub, api_key_env for endpoints"
KNOWN: set[str] = set()  # secret values this process holds (an endpoint's key, a recipe's secret): never shown
# a token as issued (hf_ + 34 letters and digits...), not a name that merely starts so (outputs/hf_baseline_run)
ISSUED_TOKEN = re.compile(
    r"\b(hf_[A-Za-z0-9]{30,}|sk-(?=[\w-]*\d)(?=[\w-]*[A-Z])[\w-]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,}|glpat-[\w-]{20,}"
    r"|xox[abpr]-[\w-]{10,}|AKIA[A-Z0-9]{16})"
)


def redact_record(record: logging.LogRecord) -> bool:
    """A ``logging`` filter: the record's message, arguments merged, redacted."""
    message = record.getMessage()
    if (hidden := redact(message)) != message:
        record.msg, record.args = hidden, None
    return True


def is_secret_key(key: object) -> bool:
    """A mapping key whose value is a secret (the one rule: refused in recipes, redacted everywhere).

    >>> [k for k in ("hub_token", "x-api-key", "Authorization", "max_new_tokens", "keys", "seed") if is_secret_key(k)]
    ['hub_token', 'x-api-key', 'Authorization']
    """
    return _secret_name(str(key))


@functools.lru_cache(maxsize=4096)
def _secret_name(name: str) -> bool:
    name = re.sub(r"[-. ]", "_", name.casefold())
    return bool(SECRET_KEY.search(name)) and not TOKENIZER_TOKEN.search(name)


def keep_secret(value: Any) -> None:
    """Remember a secret value (its strings of 6 characters or more) so that ``redact`` hides it from now on."""
    if isinstance(value, str) and len(value.strip()) >= 6:
        KNOWN.add(value.strip())
    for inner in value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ():
        keep_secret(inner)


def holds_secret(value: Any) -> bool:
    """Whether ``value`` holds an issued token, a ``user:password@`` URL or a secret-keyed entry."""
    if isinstance(value, str):
        pairs = (is_secret_key(m["name"]) for pattern in KEY_VALUES for m in pattern.finditer(value))
        return bool(ISSUED_TOKEN.search(value)) or any(p.search(value) for p, _ in SECRET_TEXT[1:]) or any(pairs)
    return isinstance(value, (dict, list, tuple)) and redact(value) != value


def config_secrets(config: Any, file: str = "") -> list[Problem]:
    """A problem per field of a dataclass config (``GRPOConfig``) holding a secret: transformers saves the config in
    clear in every checkpoint's ``training_args.bin`` and sends it to trackers."""
    found = []
    for field in dataclasses.fields(config) if dataclasses.is_dataclass(config) else ():
        value = getattr(config, field.name, None)
        if value in (None, "", False) or not isinstance(value, (str, dict, list, tuple)):
            continue
        if is_secret_key(field.name) or holds_secret(value):
            why = "a secret here is saved in clear in every checkpoint's training_args.bin and sent to trackers"
            found.append(Problem(file, f"trainer.{field.name}", why, SECRET_FIX))
    return found


def redact(value: Any) -> Any:
    """``value`` with every secret hidden: the values this process knows (``keep_secret``, variables named like
    secrets: HF_TOKEN), issued tokens, ``user:password@`` in URLs, ``token=...``, and in mappings the values of keys
    named like secrets.

    >>> redact("https://bob:hunter2@judge.example/v1 with hf_abcdefghijkl")
    'https://<redacted>@judge.example/v1 with hf_<redacted>'
    >>> redact({"trainer": {"hub_token": "x", "seed": 1}})
    {'trainer': {'hub_token': '<redacted>', 'seed': 1}}
    """
    if isinstance(value, str):
        env = (v.strip() for k, v in os.environ.items() if len(v.strip()) >= 6 and is_secret_key(k))
        for known in sorted({*KNOWN, *env}, key=len, reverse=True):
            value = value.replace(known, HIDDEN)
        for pattern, hidden in SECRET_TEXT:
            value = pattern.sub(hidden, value)
        for pattern in KEY_VALUES:
            value = pattern.sub(lambda m: m["head"] + HIDDEN if is_secret_key(m["name"]) else m[0], value)
        return value
    if isinstance(value, dict):
        return {k: HIDDEN if is_secret_key(k) and v not in (None, "") else redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(v) for v in value)
    return value
