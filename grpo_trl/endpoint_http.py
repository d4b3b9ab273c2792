"""The HTTP side of :mod:`grpo_trl.endpoint` (which re-exports it): its error, the ``openai`` import, the URL and
key checks, one line per failure, and the transport that bounds each attempt to ``timeout`` seconds in all and
``MAX_RESPONSE_BYTES``.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from typing import Any

from grpo_trl.errors import GrpoTrlError, Problem, keep_secret

EXTRA_HINT = "pip install 'grpo-trl[endpoint]' (the openai client)"
MAX_RESPONSE_BYTES = 16 * 2**20  # one answer (a judge's score, a batch of completions) is far smaller


class EndpointError(GrpoTrlError):
    """An OpenAI-compatible server could not be used; ``status``: the HTTP status it answered, if any."""

    def __init__(self, message: str, *, where: str = "endpoint", key: str = "base_url", status: int | None = None):
        super().__init__([Problem(where, key, message)])
        self.message, self.status = message, status


def _openai() -> Any:
    try:
        import openai
    except ImportError:
        raise EndpointError(f"the openai package is not installed; {EXTRA_HINT}") from None
    return openai


def _http() -> Any:
    """The HTTP package the installed ``openai`` is built on (``httpx``)."""
    base = next(c for c in _openai().DefaultAsyncHttpxClient.__mro__[1:] if c.__name__ == "AsyncClient")
    return importlib.import_module(base.__module__.partition(".")[0])


def check_url(base_url: Any, where: str = "endpoint", key: str = "base_url") -> str:
    """``base_url`` without its trailing ``/`` if it is a usable http(s) URL, else one EndpointError (a port out of
    range included: parsing refuses ':1' of a broken IPv6 address)."""
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise EndpointError(
            f"must be an http(s) URL such as http://127.0.0.1:8000/v1, got {base_url!r}"[:300], where=where, key=key
        )
    httpx = _http()
    try:
        url = httpx.URL(base_url)
        if url.port is not None and not 0 < url.port < 65536:
            raise ValueError(f"port {url.port} out of range")
        if not url.host:
            raise ValueError("no host")
    except (ValueError, TypeError, httpx.InvalidURL) as exc:
        raise EndpointError(
            f"not a valid URL ({base_url[:200]!r}: {exc}) (e.g. http://127.0.0.1:8000/v1)", where=where, key=key
        ) from None
    return base_url.rstrip("/")


def _client(base_url: str, key: str, timeout: float, retries: int) -> Any:
    """``AsyncOpenAI`` whose transport gives each attempt ``timeout`` s in all (httpx's own timeouts bound each read,
    not their sum: a server trickling a byte a second would live on) and reads at most ``MAX_RESPONSE_BYTES``."""
    httpx = _http()

    class Bounded(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: Any) -> Any:
            try:
                return await asyncio.wait_for(self._whole(request), timeout)
            except TimeoutError:
                raise httpx.ReadTimeout(f"no complete answer within {timeout:g} s", request=request) from None

        async def _whole(self, request: Any) -> Any:
            response, body, size = await super().handle_async_request(request), [], 0
            try:
                async for chunk in response.stream:
                    if (size := size + len(chunk)) > MAX_RESPONSE_BYTES:
                        why = f"the answer is longer than {MAX_RESPONSE_BYTES // 2**20} MiB (stopped reading)"
                        raise httpx.RemoteProtocolError(why, request=request)
                    body.append(chunk)
            finally:
                await response.stream.aclose()
            response.stream = httpx.ByteStream(b"".join(body))  # read whole: the client reads it from memory
            return response

    http = httpx.AsyncClient(transport=Bounded(), timeout=timeout)
    return _openai().AsyncOpenAI(
        base_url=base_url, api_key=key, timeout=timeout, max_retries=retries, http_client=http
    )


def api_key(api_key_env: str | None, where: str = "endpoint", key: str = "api_key_env") -> str:
    """The key held by the environment variable NAMED ``api_key_env``; ``"EMPTY"`` if None."""
    if not api_key_env:
        return "EMPTY"
    if not isinstance(api_key_env, str) or not api_key_env.replace("_", "").isalnum() or api_key_env[0].isdigit():
        raise EndpointError(  # the value is not echoed: it may be the key itself
            "must be the NAME of an environment variable (letters, digits, _), e.g. OPENAI_API_KEY, never the key",
            where=where,
            key=key,
        )
    if not (value := os.environ.get(api_key_env)):
        raise EndpointError(f"environment variable {api_key_env} is not set (export it first)", where=where, key=key)
    keep_secret(value)  # a server may quote it back ("Incorrect API key provided: ..."): redact hides it
    return value


def describe(exc: BaseException, base_url: str, model: str, timeout: float, retries: int) -> EndpointError:
    """One :class:`EndpointError` for an ``openai`` exception (or any other), never quoting the key."""
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
        why = f"{type(cause).__name__}: {cause} (is the server running there?)"
        return EndpointError(f"cannot reach {base_url}{after}: {why}")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        after = after if status in (408, 409, 429) or status >= 500 else ""  # the only ones retried
        refused = "the server refused the API key: set api_key_env to the NAME of the variable holding it"
        hint = {
            401: refused,
            403: refused,
            404: f"is model {model!r} served there, and does base_url end in /v1?",
            429: "rate limited: lower max_concurrency or raise retries",
        }.get(status, "the server's own log says why" if status >= 500 else "check the request parameters")
        detail = str(getattr(exc, "message", "") or "")[:200]
        return EndpointError(f"{base_url} answered HTTP {status}{after}: {detail} ({hint})", status=status)
    if isinstance(exc, ValueError | TypeError | KeyError | IndexError | AttributeError):  # an unreadable answer
        return EndpointError(f"{base_url} sent an answer that is not OpenAI-compatible: {type(exc).__name__}: {exc}")
    return EndpointError(f"{base_url}: {type(exc).__name__}: {exc}")
