"""The one client for OpenAI-compatible servers (vLLM ``serve``, TGI, llama.cpp server, a hosted API).

Used by ``grpo-trl eval --backend endpoint``, ``grpo-trl filter`` and the ``judge`` reward. It wraps the official
``openai`` package's ``AsyncOpenAI`` (an optional extra: ``pip install 'grpo-trl[endpoint]'``) and adds only what a
training tool needs around it:

- **bounded concurrency**: at most ``max_concurrency`` requests in flight per event loop (an ``asyncio.Semaphore``);
- **timeouts and retries**: ``timeout`` seconds per attempt, wall clock from connecting to the last byte of the
  answer (a server that trickles one byte a second is cut off at ``timeout``, not kept alive by each byte),
  ``retries`` more attempts on connection errors, timeouts, 408/409/429 and 5xx, with exponential backoff that
  honours ``Retry-After`` (up to 60 s) — this is the ``openai`` client's own retry loop, configured, not a second
  one. The worst case for one call is ``(retries + 1) * timeout`` plus the waits;
- **a bounded answer**: at most ``MAX_RESPONSE_BYTES`` (16 MiB) are read of one answer; an endless body is an error
  for that request, not the process's memory;
- **the API key from the NAME of an environment variable** (``api_key_env``): a key never sits in a recipe, and it
  never appears in an error message or a log line written here;
- **errors as one line**: every failure becomes an :class:`EndpointError` naming the server, the model and what to do;
- :func:`probe`: checks within ``timeout`` seconds (wall clock, DNS included) that the server answers and serves the
  model, before a long run relies on it.

Example (the fake server in ``tests/fake_openai.py`` stands in for a real one)::

    ep = Endpoint("http://127.0.0.1:8000/v1", "Qwen/Qwen2.5-0.5B-Instruct", max_concurrency=16)
    texts = ep.run([ep.chat([{"role": "user", "content": "2+2?"}], max_tokens=8) for _ in range(4)])
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from collections.abc import Awaitable, Iterable
from typing import Any, NamedTuple

from grpo_trl.endpoint_http import (  # noqa: F401 (re-exported: the client's public names stay here)
    EXTRA_HINT,
    MAX_RESPONSE_BYTES,
    EndpointError,
    _async_client,
    _openai,
    check_url,
)
from grpo_trl.errors import suggest
from grpo_trl.timeouts import in_thread


class Choice(NamedTuple):
    """One generated choice: its text, why generation stopped (``stop``, ``length``, or None if unsaid), and its
    token count when the server says (``usage.completion_tokens`` of a one-choice answer)."""

    text: str
    finish_reason: str | None
    tokens: int | None = None


def api_key(api_key_env: str | None, where: str = "endpoint", key: str = "api_key_env") -> str:
    """The key held by the environment variable NAMED ``api_key_env``; ``"EMPTY"`` (what local servers accept) if None.

    >>> api_key(None)
    'EMPTY'
    """
    if not api_key_env:
        return "EMPTY"
    if not isinstance(api_key_env, str) or not api_key_env.replace("_", "").isalnum() or api_key_env[0].isdigit():
        raise EndpointError(  # the value is not echoed: it may be the key itself
            "must be the NAME of an environment variable (letters, digits, _), e.g. OPENAI_API_KEY, never the key",
            where=where,
            key=key,
        )
    value = os.environ.get(api_key_env)
    if not value:
        raise EndpointError(f"environment variable {api_key_env} is not set (export it first)", where=where, key=key)
    return value


def describe(exc: BaseException, base_url: str, model: str, timeout: float, retries: int) -> EndpointError:
    """One clear :class:`EndpointError` for an ``openai`` exception (or any other), never quoting the key."""
    openai = _openai()
    after = f" after {retries + 1} attempt(s)" if retries else ""
    if isinstance(exc, EndpointError):
        return exc
    if isinstance(exc, openai.APITimeoutError):
        return EndpointError(
            f"no answer from {base_url} within {timeout:g} s{after} (raise timeout, check the server)"
        )
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return EndpointError(
            f"cannot reach {base_url}{after}: {type(cause).__name__}: {cause} (is the server running there?)"
        )
    if isinstance(exc, openai.APIResponseValidationError):
        status = exc.status_code
        return EndpointError(f"{base_url} answered HTTP {status} with a malformed body", status=status)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        after = after if status in (408, 409, 429) or status >= 500 else ""  # the only ones retried
        hint = {
            401: "the server refused the API key: set api_key_env to the NAME of the variable holding it",
            403: "the server refused the API key: set api_key_env to the NAME of the variable holding it",
            404: f"is model {model!r} served there, and does base_url end in /v1?",
            429: "rate limited: lower max_concurrency or raise retries",
        }.get(status, "the server's own log says why" if status >= 500 else "check the request parameters")
        detail = str(getattr(exc, "message", "") or "")[:200]
        return EndpointError(f"{base_url} answered HTTP {status}{after}: {detail} ({hint})", status=status)
    if isinstance(exc, ValueError | TypeError | KeyError | IndexError | AttributeError):  # an unreadable answer
        return EndpointError(f"{base_url} sent an answer that is not OpenAI-compatible: {type(exc).__name__}: {exc}")
    return EndpointError(f"{base_url}: {type(exc).__name__}: {exc}")


class Endpoint:
    """Chat and completion calls to one model on one OpenAI-compatible server.

    Arguments: ``base_url`` (the API root, usually ending in ``/v1``), ``model`` (as the server names it),
    ``api_key_env`` (NAME of the variable holding the key; None for servers without auth), ``max_concurrency``
    (requests in flight at once), ``timeout`` (seconds per attempt), ``retries`` (extra attempts).
    The ``openai`` client is created lazily for each event loop it is used from (TRL runs async rewards on its own
    daemon loop; :meth:`run` makes a fresh one), so one ``Endpoint`` can be shared.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = None,
        max_concurrency: int = 8,
        timeout: float = 60.0,
        retries: int = 3,
    ):
        if not isinstance(max_concurrency, int) or isinstance(max_concurrency, bool) or max_concurrency < 1:
            raise EndpointError(f"must be an integer >= 1, got {max_concurrency!r}", key="max_concurrency")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise EndpointError(f"must be a number of seconds > 0, got {timeout!r}", key="timeout")
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise EndpointError(f"must be an integer >= 0, got {retries!r}", key="retries")
        self.base_url = check_url(base_url)
        self.model = model
        self.api_key_env = api_key_env
        self.max_concurrency = max_concurrency
        self.timeout = float(timeout)
        self.retries = retries
        self._key = api_key(api_key_env)  # fail at construction, not on the first request
        _openai()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._semaphore: asyncio.Semaphore | None = None

    def __repr__(self) -> str:  # never shows the key
        return f"Endpoint({self.base_url!r}, {self.model!r}, max_concurrency={self.max_concurrency})"

    def _for_loop(self) -> tuple[Any, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._client = _async_client(self.base_url, self._key, self.timeout, self.retries)
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
            self._loop = loop
        return self._client, self._semaphore  # type: ignore[return-value]

    async def _call(self, kind: str, **params: Any) -> list[Choice]:
        client, semaphore = self._for_loop()
        async with semaphore:
            try:
                if kind == "chat":
                    response = await client.chat.completions.create(model=self.model, **params)
                    out = [Choice(c.message.content or "", c.finish_reason) for c in response.choices]
                else:
                    response = await client.completions.create(model=self.model, **params)
                    out = [Choice(c.text or "", c.finish_reason) for c in response.choices]
                usage = getattr(response, "usage", None)
                if len(out) == 1 and isinstance(getattr(usage, "completion_tokens", None), int):
                    out = [out[0]._replace(tokens=usage.completion_tokens)]
            except Exception as exc:  # noqa: BLE001 - every failure becomes one EndpointError
                raise describe(exc, self.base_url, self.model, self.timeout, self.retries) from None
        if not all(isinstance(c.text, str) for c in out):
            raise EndpointError(f"{self.base_url} sent choices without text")
        return out

    async def chat(self, messages: list[dict[str, Any]], **params: Any) -> list[str]:
        """The assistant texts (one per ``n``) for a chat ``messages`` list; ``params`` go to the API as they are
        (``max_tokens``, ``temperature``, ``top_p``, ``n``, ``seed``, ``stop``, ``extra_body``, ...)."""
        return [c.text for c in await self._call("chat", messages=messages, **params)]

    async def complete(self, prompt: str, **params: Any) -> list[str]:
        """The completion texts (one per ``n``) for a raw ``prompt`` string (the completions API)."""
        return [c.text for c in await self._call("completions", prompt=prompt, **params)]

    async def chat_choices(self, messages: list[dict[str, Any]], **params: Any) -> list[Choice]:
        """Like :meth:`chat`, with each choice's ``finish_reason`` (``stop``, ``length``, ...)."""
        return await self._call("chat", messages=messages, **params)

    async def complete_choices(self, prompt: str, **params: Any) -> list[Choice]:
        """Like :meth:`complete`, with each choice's ``finish_reason``."""
        return await self._call("completions", prompt=prompt, **params)

    def run(self, calls: Iterable[Awaitable[Any]]) -> list[Any]:
        """Run ``calls`` concurrently (bounded by ``max_concurrency``) from synchronous code, in order; a failed
        call's slot holds its :class:`EndpointError` instead of raising, so one bad row costs only that row."""

        async def gather() -> list[Any]:
            try:
                return await asyncio.gather(*calls, return_exceptions=True)
            finally:
                if self._client is not None:
                    await self._client.close()
                self._loop = self._client = self._semaphore = None

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(gather())
        # called from inside a running loop (a notebook): run on a fresh loop in a helper thread
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, gather()).result()


def probe(
    base_url: str,
    model: str,
    timeout: float = 5.0,
    *,
    api_key_env: str | None = None,
    where: str = "endpoint",
    key: str = "base_url",
) -> list[str]:
    """Check in about ``timeout`` seconds (one attempt, no retries) that ``base_url`` answers ``GET /models`` and
    serves ``model``; return the served model names, or raise one :class:`EndpointError` saying what to fix."""
    url = check_url(base_url, where=where, key=key)
    secret = api_key(api_key_env, where=where)
    _openai()

    async def models() -> list[str]:
        client = _async_client(url, secret, timeout, 0)
        try:
            return [m.id for m in (await client.models.list()).data]
        finally:
            await client.close()

    late = _openai().APITimeoutError(request=None)  # type: ignore[arg-type]
    try:  # its own thread and loop: the wait holds even if a resolver thread hangs
        served = in_thread(lambda: asyncio.run(models()), timeout + 1.0, late, name="grpo-trl-probe")
    except Exception as exc:  # noqa: BLE001 - one EndpointError saying what to fix
        err = describe(exc, url, model, timeout, 0)
        message = err.message
        if err.status == 404 and not url.endswith("/v1"):
            message = f"{url}/models not found (HTTP 404): OpenAI-compatible servers answer under /v1; try {url}/v1"
        raise EndpointError(message, where=where, key=key, status=err.status) from None
    if model not in served:
        shown = ", ".join(served[:10]) + (" ..." if len(served) > 10 else "") if served else "none"
        raise EndpointError(
            f"model {model!r} is not served at {url}{suggest(model, served)}; it serves: {shown}",
            where=where,
            key="model",
        )
    return served
