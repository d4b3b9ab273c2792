"""A fake OpenAI-compatible server on 127.0.0.1 for tests: a stand-in for an EXTERNAL service (vLLM ``serve``, TGI,
llama.cpp, a hosted API) that cannot run here, so that the client's failure paths can be driven on purpose.

It serves ``GET /v1/models``, ``POST /v1/chat/completions`` and ``POST /v1/completions``. Each request takes the
next behaviour from ``script`` (then ``default``):

- ``"ok"``: a normal answer; ``reply(body)`` gives the text of every choice (default: ``"fake: <last prompt text>"``,
  ``n`` times), or a list with one text, ``(text, finish_reason)`` or ``(text, finish_reason, tokens)`` per choice
  (``usage.completion_tokens`` adds up the tokens, 1 per choice where not given);
- ``"500"``, ``"401"``, ... (any status code): that status with an OpenAI-style error body;
- ``"429:2"`` / ``"503:1.5"``: that status with ``Retry-After: 2`` (seconds);
- ``"malformed"``: HTTP 200 whose body is not JSON;
- ``"close"``: the connection is closed without any answer;
- ``"hang"``: no answer until the server stops (bounded by ``hang_limit`` seconds, so no thread outlives a test);
- ``"slow:0.5"``: a normal answer after that many seconds;
- ``"trickle:1"``: a normal answer sent one byte every that many seconds (until the server stops);
- ``"endless"``: HTTP 200 with a chunked body that never ends (64 KiB chunks, until the client hangs up).

Every request is recorded (``server.requests``: method, path, headers with lower-case names, JSON body, arrival
time), so tests can count retries and see what was sent; ``max_in_flight`` is the most requests handled at once.
Only 127.0.0.1 is ever bound.

Example:
    >>> import json, urllib.request
    >>> with FakeOpenAI(models=["tiny"]) as server:
    ...     body = json.load(urllib.request.urlopen(server.base_url + "/models", timeout=5))
    >>> [m["id"] for m in body["data"]]
    ['tiny']
"""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _last_text(body: dict) -> str:
    if "messages" in body:
        content = body["messages"][-1].get("content", "") if body["messages"] else ""
        return content if isinstance(content, str) else json.dumps(content)
    prompt = body.get("prompt", "")
    return prompt if isinstance(prompt, str) else json.dumps(prompt)


def default_reply(body: dict) -> str:
    return "fake: " + _last_text(body)


class QuietServer(ThreadingHTTPServer):
    """Every test server: a handler released after its test (a hang, a slow answer) may fail while whichever test
    runs next captures ``sys.stderr``; its report goes to the process's own stderr (pytest shows it with a failure)
    so it never breaks that test's one-error-line assertion. A client that hung up is not reported at all."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], OSError):
            traceback.print_exc(file=sys.__stderr__)


class FakeOpenAI:
    """Context manager running the fake server in a daemon thread; ``base_url`` ends in ``/v1``."""

    def __init__(
        self,
        models: list[str] | None = None,
        script: list[str] | None = None,
        default: str = "ok",
        reply: Callable[[dict], str | list] = default_reply,
        hang_limit: float = 30.0,
    ):
        self.models = list(models or ["fake-model"])
        self.script = list(script or [])
        self.default = default
        self.reply = reply
        self.hang_limit = hang_limit
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests the server was handling at once
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server = QuietServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()  # releases hanging handlers
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def next_behaviour(self) -> str:
        with self._lock:
            return self.script.pop(0) if self.script else self.default

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def _send(
                self, status: int, payload: bytes, headers: dict[str, str] | None = None, trickle: float = 0.0
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                if not trickle:
                    self.wfile.write(payload)
                    return
                try:
                    for i in range(len(payload)):  # one byte at a time: each read is quick, the answer never ends
                        if fake._stop.wait(trickle):
                            break
                        self.wfile.write(payload[i : i + 1])
                        self.wfile.flush()
                except OSError:  # the client hung up
                    self.close_connection = True

            def _error(self, status: int, headers: dict[str, str] | None = None) -> None:
                body = {"error": {"message": f"fake error {status}", "type": "fake", "code": status}}
                self._send(status, json.dumps(body).encode(), headers)

            def _handle(self, method: str) -> None:
                with fake._lock:
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    self._serve(method)
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {"_unparsed": raw.decode(errors="replace")}
                with fake._lock:
                    fake.requests.append(
                        {
                            "method": method,
                            "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": body,
                            "time": time.monotonic(),
                        }
                    )
                behaviour = fake.next_behaviour()
                kind, _, arg = behaviour.partition(":")
                if kind == "close":
                    self.close_connection = True
                    self.connection.close()
                    return
                if kind == "hang":
                    fake._stop.wait(fake.hang_limit)
                    self.close_connection = True
                    return
                if kind == "malformed":
                    self._send(200, b'{"id": "x", "choices": [ this is not json')
                    return
                if kind.isdigit():
                    self._error(int(kind), {"Retry-After": arg} if arg else None)
                    return
                if kind == "slow":
                    fake._stop.wait(float(arg or 1.0))
                if kind == "endless":
                    self._endless()
                    return
                self._answer(method, body, trickle=float(arg or 1.0) if kind == "trickle" else 0.0)

            def _endless(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                chunk = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
                deadline = time.monotonic() + fake.hang_limit
                try:
                    while not fake._stop.is_set() and time.monotonic() < deadline:
                        self.wfile.write(chunk)
                except OSError:  # the client hung up
                    pass
                self.close_connection = True

            def _answer(self, method: str, body: dict, trickle: float = 0.0) -> None:
                path = self.path.rstrip("/")
                if method == "GET" and path.endswith("/v1/models"):
                    data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in fake.models]
                    self._send(200, json.dumps({"object": "list", "data": data}).encode(), trickle=trickle)
                    return
                chat = path.endswith("/v1/chat/completions")
                if method != "POST" or not (chat or path.endswith("/v1/completions")):
                    self._error(404)
                    return
                if body.get("model") not in fake.models:
                    self._error(404)
                    return
                n = int(body.get("n") or 1)
                made = fake.reply(body)
                made = [made] * n if isinstance(made, str) else made
                made = [(m, "stop", 1) if isinstance(m, str) else (*m, 1)[:3] for m in made]
                choices = [
                    {"index": i, "finish_reason": reason, "logprobs": None}
                    | ({"message": {"role": "assistant", "content": text}} if chat else {"text": text})
                    for i, (text, reason, _) in enumerate(made)
                ]
                tokens = sum(m[2] for m in made)
                answer = {
                    "id": "fake-1",
                    "object": "chat.completion" if chat else "text_completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": choices,
                    "usage": {"prompt_tokens": 1, "completion_tokens": tokens, "total_tokens": tokens + 1},
                }
                self._send(200, json.dumps(answer).encode(), trickle=trickle)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self._handle("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._handle("POST")

        return Handler
