"""The one client for OpenAI-compatible servers (vLLM ``serve``, TGI, a hosted API): eval's endpoint backend,
``filter`` and the ``judge`` reward. ``AsyncOpenAI`` (its own retries) with bounded concurrency, a bounded answer
(``endpoint_http``), the key only from the NAME of an environment variable, every failure one ``EndpointError``.
``probe``: the server answers and serves the model, within ``timeout``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Iterable
from typing import Any, NamedTuple

from grpo_trl.endpoint_http import EndpointError, _client, _openai, api_key, check_url, describe
from grpo_trl.errors import suggest
from grpo_trl.timeouts import in_thread


class Choice(NamedTuple):
    """One generated choice: text, ``finish_reason`` and its token count when the server says."""

    text: str
    finish_reason: str | None
    tokens: int | None = None


def _whole(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


class Endpoint:
    """Chat and completion calls to one ``model`` on one server; ``api_key_env``: NAME of the variable holding the
    key. The client is made per event loop it is used from, so one ``Endpoint`` can be shared."""

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
        number = isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0
        for name, value, ok, want in (
            ("max_concurrency", max_concurrency, _whole(max_concurrency, 1), "an integer >= 1"),
            ("timeout", timeout, number, "a number of seconds > 0"),
            ("retries", retries, _whole(retries, 0), "an integer >= 0"),
        ):
            if not ok:
                raise EndpointError(f"must be {want}, got {value!r}", key=name)
        self.base_url, self.model, self.api_key_env = check_url(base_url), model, api_key_env
        self.max_concurrency, self.timeout, self.retries = max_concurrency, float(timeout), retries
        self._key = api_key(api_key_env)  # fail at construction, not on the first request
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._semaphore: asyncio.Semaphore | None = None

    def __repr__(self) -> str:  # never shows the key
        return f"Endpoint({self.base_url!r}, {self.model!r}, max_concurrency={self.max_concurrency})"

    async def choices(self, kind: str, **params: Any) -> list[Choice]:
        """The choices of a ``chat`` (``messages=``) or ``completions`` (``prompt=``) call; ``params`` as they are."""
        if (loop := asyncio.get_running_loop()) is not self._loop:
            self._client = _client(self.base_url, self._key, self.timeout, self.retries)
            self._semaphore, self._loop = asyncio.Semaphore(self.max_concurrency), loop
        async with self._semaphore:  # type: ignore[union-attr]
            try:
                api = self._client.chat.completions if kind == "chat" else self._client.completions
                response = await api.create(model=self.model, **params)
                out = [
                    Choice(c.message.content or "" if kind == "chat" else c.text or "", c.finish_reason)
                    for c in response.choices
                ]
                usage = getattr(response, "usage", None)
                if len(out) == 1 and isinstance(getattr(usage, "completion_tokens", None), int):
                    out = [out[0]._replace(tokens=usage.completion_tokens)]
            except Exception as exc:  # noqa: BLE001 - every failure becomes one EndpointError
                raise describe(exc, self.base_url, self.model, self.timeout, self.retries) from None
        if not all(isinstance(c.text, str) for c in out):
            raise EndpointError(f"{self.base_url} sent choices without text")
        return out

    async def chat(self, messages: list[dict[str, Any]], **params: Any) -> list[str]:
        return [c.text for c in await self.choices("chat", messages=messages, **params)]

    async def complete(self, prompt: str, **params: Any) -> list[str]:
        return [c.text for c in await self.choices("completions", prompt=prompt, **params)]

    def run(self, calls: Iterable[Awaitable[Any]]) -> list[Any]:
        """Run ``calls`` concurrently from synchronous code, in order; a failed call's slot holds its
        :class:`EndpointError`, so one bad row costs only that row."""

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
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:  # inside a running loop (a notebook)
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
    """The model names ``base_url`` serves (``GET /models``, one attempt within about ``timeout`` s, DNS included);
    one :class:`EndpointError` saying what to fix when it does not answer or does not serve ``model``."""
    url = check_url(base_url, where=where, key=key)
    secret = api_key(api_key_env, where=where)

    async def models() -> list[str]:
        client = _client(url, secret, timeout, 0)
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
