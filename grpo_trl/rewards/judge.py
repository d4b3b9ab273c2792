"""``judge``: an LLM behind an OpenAI-compatible endpoint scores each completion (async: TRL overlaps it with the
other rewards). A Jinja ``prompt`` is rendered per row; the answer read with ``score_regex`` or ``score_field`` and
mapped from ``score_range`` onto [0, 1]; a failure costs its row; answers cached in SQLite (``cache``)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

from grpo_trl.endpoint import Endpoint, EndpointError, probe
from grpo_trl.errors import GrpoTrlError
from grpo_trl.io import open_regular, writable
from grpo_trl.rewards.registry import RewardError, register_reward
from grpo_trl.rewards.results import report_fault
from grpo_trl.rewards.text import completion_text

logger = logging.getLogger(__name__)

DEFAULT_REGEX = r"(-?\d+(?:\.\d+)?)"
MAX_ANSWER_CHARS = 20_000  # a judge answer longer than this is read only at its end
APPLICATION_ID = 0x67727074  # "grpt": SQLite's header field that marks a cache grpo-trl made (PRAGMA application_id)
SCHEMA = "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, answer TEXT NOT NULL)"


def _template(source: str) -> Any:
    from jinja2 import StrictUndefined, TemplateSyntaxError
    from jinja2.sandbox import SandboxedEnvironment

    if not isinstance(source, str) or not source.strip():
        raise RewardError(
            "reward 'judge': args.prompt must be a Jinja template, e.g. 'Rate: {{ completion }}'", key="args"
        )
    try:
        return SandboxedEnvironment(undefined=StrictUndefined, autoescape=False).from_string(source)
    except TemplateSyntaxError as exc:
        raise RewardError(
            f"reward 'judge': args.prompt is not a valid Jinja template: {exc} (line {exc.lineno})"
        ) from None


def _made_here(path: Path) -> bool:
    """An SQLite cache grpo-trl made: its ``application_id`` (header offset 68) is grpo-trl's, or (older) its table."""
    try:
        with open_regular(path) as fh:
            head = fh.read(100)
        if not head.startswith(b"SQLite format 3\0") or int.from_bytes(head[68:72], "big") == APPLICATION_ID:
            return head.startswith(b"SQLite format 3\0")
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            tables = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table'").fetchall()
        return tables == [(SCHEMA.replace(" IF NOT EXISTS", ""),)]
    except (OSError, ValueError, sqlite3.Error):
        return False


def cache_path(path: str | Path, make: bool = False) -> Path:
    """``args.cache`` where the one writer's rules allow it (no symlink, no FIFO or folder, no file grpo-trl did not
    make): new, or a cache made earlier. What check runs and train opens; ``make``: its folder made and tried."""
    try:
        return writable(Path(path).expanduser(), flag="args.cache", mine=_made_here, folder=make)
    except GrpoTrlError as exc:  # a RewardError: check and build_rewards name the entry
        raise RewardError(exc.problems) from None


class _Cache:
    """Judge answers on disk, keyed by a hash of the request (model, messages, sampling parameters)."""

    def __init__(self, path: str | Path):
        self.path = cache_path(path, make=True)
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            with self._db:  # the connection as a context: committed at the end of the block
                self._db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                self._db.execute(SCHEMA)
        except sqlite3.Error as exc:
            why = f"reward 'judge': cannot use {str(self.path)!r} as its cache ({exc})"
            raise RewardError(why, key="args.cache", fix="move it away or choose another args.cache") from None
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, items: dict[str, str]) -> None:
        with self._lock, self._db:
            self._db.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?)", items.items())


def _prompt_text(prompt: Any) -> str:
    """The last user turn of a conversational prompt, or the prompt itself when it is a string."""
    if isinstance(prompt, list):
        users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        return str(users[-1].get("content") or "") if users else completion_text(prompt)
    return "" if prompt is None else str(prompt)


@register_reward("judge")
class Judge:
    """Scores from an LLM judge on an OpenAI-compatible endpoint, mapped from ``score_range`` onto [0, 1]."""

    def __init__(
        self,
        base_url: str,
        model: str,
        prompt: str,
        score_regex: str | None = None,
        score_field: str | None = None,
        score_range: tuple[float, float] | list[float] = (0.0, 10.0),
        system: str | None = None,
        api_key_env: str | None = None,
        max_concurrency: int = 8,
        timeout: float = 60.0,
        retries: int = 3,
        max_tokens: int = 256,
        temperature: float = 0.0,
        extra_body: dict | None = None,
        cache: str | None = None,
    ):
        self.check_args(
            {"prompt": prompt, "score_regex": score_regex, "score_field": score_field, "score_range": score_range},
            probe_endpoint=False,
        )
        self.template = _template(prompt)
        self.regex = re.compile(score_regex or DEFAULT_REGEX)
        self.field = score_field
        self.low, self.high = (float(v) for v in score_range)
        self.system = system
        self.endpoint = Endpoint(
            base_url,
            model,
            api_key_env=api_key_env,
            max_concurrency=max_concurrency,
            timeout=timeout,
            retries=retries,
        )
        self.params: dict[str, Any] = {"max_tokens": max_tokens, "temperature": temperature}
        if extra_body:  # server-specific request fields, e.g. vLLM's {"structured_outputs": {"choice": ["0", "1"]}}
            self.params["extra_body"] = dict(extra_body)
        self.cache = _Cache(cache) if cache else None
        self.failures = 0

    @staticmethod
    def check_args(args: dict[str, Any], probe_endpoint: bool = True) -> None:
        """What ``grpo-trl check`` runs: the template and score settings, then the endpoint and the model name."""
        if "prompt" in args:
            _template(args["prompt"])
        if args.get("score_regex") and args.get("score_field"):
            raise RewardError("reward 'judge': give score_regex or score_field, not both", key="args.score_field")
        if args.get("score_regex"):
            try:
                re.compile(args["score_regex"])
            except re.error as exc:
                raise RewardError(
                    f"reward 'judge': args.score_regex is not a valid regex: {exc}", key="args"
                ) from None
        rng = args.get("score_range", (0, 10))
        if (
            not isinstance(rng, (list, tuple))
            or len(rng) != 2
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in rng)
            or not rng[0] < rng[1]
        ):
            raise RewardError(
                f"reward 'judge': args.score_range must be [low, high] with low < high, got {rng!r}", key="args"
            )
        if args.get("cache"):
            cache_path(args["cache"])
        if probe_endpoint and args.get("base_url") and args.get("model"):
            try:
                probe(args["base_url"], args["model"], timeout=5.0, api_key_env=args.get("api_key_env"))
            except EndpointError as exc:
                raise RewardError(f"reward 'judge': {exc.message}", key="args") from None

    def score_of(self, answer: str) -> float | None:
        """The judge's ``answer`` as a reward in [0, 1], or None when it holds no readable score in range."""
        answer = answer[-MAX_ANSWER_CHARS:]
        try:
            if self.field is not None:
                start, end = answer.find("{"), answer.rfind("}")
                value: Any = json.loads(answer[start : end + 1]) if 0 <= start < end else None
                for part in self.field.split("."):
                    value = value.get(part) if isinstance(value, dict) else None
            else:
                found = self.regex.findall(answer) or [None]  # the last match: its first group, else the whole match
                value = found[-1][0] if isinstance(found[-1], tuple) else found[-1]
            value = float(value)
        except (ValueError, TypeError, IndexError, ArithmeticError, RecursionError):  # JSON nested past the limit
            return None
        if not self.low <= value <= self.high:
            return None
        return (value - self.low) / (self.high - self.low)

    def _messages(self, prompt: Any, completion: Any, row: dict[str, Any]) -> list[dict[str, str]]:
        content = self.template.render(
            **row, prompt=_prompt_text(prompt), messages=prompt, completion=completion_text(completion)
        )
        return ([{"role": "system", "content": self.system}] if self.system else []) + [
            {"role": "user", "content": content}
        ]

    def _key(self, messages: list[dict[str, str]]) -> str:
        # not the URL: the same model served again on another host or port answers the same request the same way
        request = {"model": self.endpoint.model, "messages": messages, **self.params}
        return hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()

    async def __call__(self, completions: list, prompts: list | None = None, **columns: Any) -> list[float | None]:
        n = len(completions)
        names = [k for k, v in columns.items() if isinstance(v, (list, tuple)) and len(v) == n]
        prompts = list(prompts) if prompts is not None else [None] * n
        fresh: dict[str, str] = {}  # answers got now, cached together at the end
        rows = (self._row(prompts[i], completions[i], {k: columns[k][i] for k in names}, fresh) for i in range(n))
        out = list(await asyncio.gather(*rows))
        if self.cache and fresh:
            self.cache.put(fresh)
        return out

    async def _row(self, prompt: Any, completion: Any, row: dict[str, Any], fresh: dict) -> float | None:
        """One completion's score: its judge answer from the cache or the endpoint, read by ``score_of``."""
        try:
            messages = self._messages(prompt, completion, row)
        except Exception as exc:  # noqa: BLE001 - a template naming a missing column: this row only
            return self._fault(f"prompt template failed: {type(exc).__name__}: {exc}")
        key = self._key(messages)
        answer = self.cache.get(key) if self.cache else None
        if answer is None:
            try:
                answers = await self.endpoint.chat(messages, **self.params)
            except Exception as exc:  # noqa: BLE001 - an EndpointError, or anything else: this row only
                return self._fault(f"request failed: {getattr(exc, 'message', exc)}")
            if not answers:
                return None
            answer = fresh[key] = answers[0]
        score = self.score_of(answer)
        if score is None:
            self._fault(f"found no score in range [{self.low:g}, {self.high:g}] in its answer {answer[-120:]!r}")
        return score

    def _fault(self, why: str) -> None:
        """One row scored None: counted by the safety wrapper when there is one, else logged here."""
        self.failures += 1
        if not report_fault(why) and (self.failures <= 3 or self.failures % 100 == 0):
            logger.warning("judge: row scored None (%d so far): %s", self.failures, why)
