"""The HTTP side of :mod:`grpo_trl.endpoint`: its one error type, the ``openai`` import, URL checks and the
bounded transport (``timeout`` seconds from connecting to the answer's last byte, at most ``MAX_RESPONSE_BYTES`` read).

``grpo_trl.endpoint`` re-exports every public name here; use it from there.
"""

from __future__ import annotations

import asyncio
from typing import Any

from grpo_trl.errors import GrpoTrlError, Problem

EXTRA_HINT = "pip install 'grpo-trl[endpoint]' (the openai client)"
MAX_RESPONSE_BYTES = 16 * 2**20  # one answer (a judge's score, a batch of completions) is far smaller


class EndpointError(GrpoTrlError):
    """An OpenAI-compatible server could not be used: ``where: key: message`` in one line.

    ``status`` is the HTTP status when the server answered with one (else ``None``).

    >>> str(EndpointError("no answer", where="recipe.yaml", key="rewards[0].args.base_url"))
    'recipe.yaml: rewards[0].args.base_url: no answer'
    """

    def __init__(self, message: str, *, where: str = "endpoint", key: str = "base_url", status: int | None = None):
        super().__init__([Problem(where, key, message)])
        self.message = message
        self.status = status


def _openai() -> Any:
    try:
        import openai
    except ImportError:
        raise EndpointError(f"the openai package is not installed; {EXTRA_HINT}") from None
    return openai


def _http() -> Any:
    """The HTTP package the installed ``openai`` is built on (``httpx``; ``httpx2`` from openai 3)."""
    import importlib

    base = next(c for c in _openai().DefaultAsyncHttpxClient.__mro__[1:] if c.__name__ == "AsyncClient")
    return importlib.import_module(base.__module__.partition(".")[0])


def check_url(base_url: Any, where: str = "endpoint", key: str = "base_url") -> str:
    """``base_url`` without its trailing ``/`` if it is an http(s) URL the client can use, else one EndpointError.

    >>> check_url("http://[::1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    grpo_trl.endpoint_http.EndpointError: endpoint: base_url: not a valid URL ('http://[::1': ...) (e.g. http://...)
    """
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise EndpointError(
            f"must be an http(s) URL such as http://127.0.0.1:8000/v1, got {base_url!r}"[:300], where=where, key=key
        )
    httpx = _http()
    try:
        url = httpx.URL(base_url)
        if url.port is not None and not 0 < url.port < 65536:  # parsing it refuses ':1' of a broken IPv6 address
            raise ValueError(f"port {url.port} out of range")
        if not url.host:
            raise ValueError("no host")
    except (ValueError, TypeError, httpx.InvalidURL) as exc:
        raise EndpointError(
            f"not a valid URL ({base_url[:200]!r}: {exc}) (e.g. http://127.0.0.1:8000/v1)", where=where, key=key
        ) from None
    return base_url.rstrip("/")


def _bounded_transport(timeout: float) -> Any:
    """An ``httpx`` transport that gives each request ``timeout`` seconds in all (connect, send, every byte of the
    answer) and reads at most ``MAX_RESPONSE_BYTES``; httpx's own timeouts bound each read, not their sum."""
    httpx = _http()

    class Bounded(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.AsyncHTTPTransport()

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            try:
                return await asyncio.wait_for(self._whole(request), timeout)
            except TimeoutError:
                raise httpx.ReadTimeout(f"no complete answer within {timeout:g} s", request=request) from None

        async def _whole(self, request: httpx.Request) -> httpx.Response:
            response = await self.inner.handle_async_request(request)
            body, size = [], 0
            try:
                async for chunk in response.stream:
                    size += len(chunk)
                    if size > MAX_RESPONSE_BYTES:
                        raise httpx.RemoteProtocolError(
                            f"the answer is longer than {MAX_RESPONSE_BYTES // 2**20} MiB (stopped reading)",
                            request=request,
                        )
                    body.append(chunk)
            finally:
                await response.aclose()
            return httpx.Response(
                response.status_code,
                headers=response.headers,
                stream=httpx.ByteStream(b"".join(body)),
                request=request,
                extensions=response.extensions,
            )

        async def aclose(self) -> None:
            await self.inner.aclose()

    return Bounded()


def _async_client(base_url: str, key: str, timeout: float, retries: int) -> Any:
    openai = _openai()
    http = _http().AsyncClient(transport=_bounded_transport(timeout), timeout=timeout)
    return openai.AsyncOpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=retries, http_client=http)
