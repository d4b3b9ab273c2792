"""grpo_trl.endpoint against tests/fake_openai.py, a local fake of an EXTERNAL OpenAI-compatible server (it cannot
run here): every answer class (normal, 5xx, 429/503 with Retry-After, malformed JSON, closed connection, hang,
slow), bounded concurrency, the key from an environment variable name, probe. All traffic goes to 127.0.0.1, every
loop is bounded by the script length and the timeouts."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from grpo_trl.endpoint import Endpoint, EndpointError, api_key, probe
from grpo_trl.errors import format_error_lines
from tests.fake_openai import FakeOpenAI

pytest.importorskip("openai")

MSG = [{"role": "user", "content": "hi"}]


def one(server: FakeOpenAI, call: str = "chat", **kwargs) -> object:
    ep = Endpoint(server.base_url, "m", **{"timeout": 2.0, "retries": 2, **kwargs})
    coro = ep.chat(MSG, max_tokens=4) if call == "chat" else ep.complete("hi", max_tokens=4)
    return ep.run([coro])[0]


@pytest.mark.parametrize("call", ["chat", "complete"])
def test_normal_answer_and_parameters_pass_through(call):
    with FakeOpenAI(models=["m"]) as server:
        ep = Endpoint(server.base_url, "m")
        coro = ep.chat(MSG, n=3, temperature=0.5, seed=7) if call == "chat" else ep.complete("hi", n=3, top_p=0.9)
        assert ep.run([coro]) == [["fake: hi"] * 3]
    body = server.requests[0]["body"]
    assert server.requests[0]["path"] == ("/v1/chat/completions" if call == "chat" else "/v1/completions")
    assert body["model"] == "m" and body["n"] == 3
    assert (body["temperature"], body["seed"]) == (0.5, 7) if call == "chat" else body["top_p"] == 0.9


def test_concurrency_is_bounded_and_results_keep_their_order():
    with FakeOpenAI(models=["m"], default="slow:0.2", reply=lambda body: body["messages"][0]["content"]) as server:
        ep = Endpoint(server.base_url, "m", max_concurrency=3)
        out = ep.run([ep.chat([{"role": "user", "content": str(i)}]) for i in range(9)])
    assert out == [[str(i)] for i in range(9)]
    assert server.max_in_flight == 3  # never more, and the bound was used


@pytest.mark.parametrize("statuses", [("500", "502"), ("503", "429"), ("408", "408")])  # each retryable one
def test_retryable_statuses_are_retried_then_succeed(statuses):
    with FakeOpenAI(models=["m"], script=list(statuses)) as server:  # two failed attempts, then the answer
        assert one(server, retries=2) == ["fake: hi"]
    assert len(server.requests) == 3


@pytest.mark.parametrize("status", ["500", "503", "429"])
def test_retries_are_bounded_and_the_error_says_so(status):
    with FakeOpenAI(models=["m"], default=status) as server:
        err = one(server, retries=1)
    assert isinstance(err, EndpointError) and err.status == int(status)
    assert f"HTTP {status} after 2 attempt(s)" in str(err)
    assert len(server.requests) == 2


@pytest.mark.parametrize("status", ["400", "401", "403", "404", "422"])
def test_client_errors_are_not_retried(status):
    with FakeOpenAI(models=["m"], script=[status]) as server:
        err = one(server, retries=3)
    assert isinstance(err, EndpointError) and err.status == int(status) and "attempt" not in str(err)
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", ["429", "503"])
def test_retry_after_is_honoured(status):
    with FakeOpenAI(models=["m"], script=[f"{status}:1.2"]) as server:
        assert one(server) == ["fake: hi"]
    first, second = server.requests
    assert second["time"] - first["time"] >= 1.15  # the client's own backoff would be ~0.5 s


def test_malformed_json_costs_only_its_row():
    with FakeOpenAI(models=["m"], script=["ok", "malformed", "ok"]) as server:
        ep = Endpoint(server.base_url, "m", max_concurrency=1, retries=0)
        out = ep.run([ep.chat(MSG) for _ in range(3)])
    assert out[0] == out[2] == ["fake: hi"]
    assert isinstance(out[1], EndpointError) and "not OpenAI-compatible" in str(out[1])


def test_closed_connection_is_retried_then_reported():
    with FakeOpenAI(models=["m"], script=["close"]) as server:
        assert one(server) == ["fake: hi"]
    with FakeOpenAI(models=["m"], default="close") as server:
        err = one(server, retries=1)
    assert isinstance(err, EndpointError) and "cannot reach" in str(err) and len(server.requests) == 2


@pytest.mark.parametrize("behaviour", ["hang", "slow:5"])
def test_no_answer_times_out_in_bounded_time(behaviour):
    with FakeOpenAI(models=["m"], default=behaviour) as server:
        start = time.monotonic()
        err = one(server, timeout=0.5, retries=0)
        elapsed = time.monotonic() - start
    assert isinstance(err, EndpointError) and "no answer" in str(err) and "within 0.5 s" in str(err)
    assert elapsed < 3


@pytest.mark.fault  # a fault probe: make faults runs it
def test_a_trickling_answer_is_cut_off_at_timeout_per_attempt():
    """A server sending one byte every 0.2 s keeps each read short: the attempt still ends at `timeout`, wall clock
    (it took 42 s for timeout 2, retries 1, and was reported as "within 2 s")."""
    with FakeOpenAI(models=["m"], default="trickle:0.2", hang_limit=30) as server:
        start = time.monotonic()
        err = one(server, timeout=1.0, retries=1)
        elapsed = time.monotonic() - start
    assert isinstance(err, EndpointError) and "within 1 s after 2 attempt(s)" in str(err), err
    assert len(server.requests) == 2 and elapsed < 2 * 1.0 + 3  # two attempts of 1 s, plus the backoff between


@pytest.mark.fault  # a fault probe: make faults runs it
def test_an_endless_answer_is_bounded_in_bytes():
    """A 200 whose chunked body never ends (1.17 GB in 6 s) is cut at MAX_RESPONSE_BYTES: one failed row."""
    with FakeOpenAI(models=["m"], default="endless", hang_limit=30) as server:
        start = time.monotonic()
        err = one(server, timeout=20.0, retries=0)
        elapsed = time.monotonic() - start
    assert isinstance(err, EndpointError) and "longer than 16 MiB" in str(err), err
    assert elapsed < 15


@pytest.mark.fault  # a fault probe: make faults runs it
@pytest.mark.parametrize("url", ["http://[::1", "http://[::1]:99999/v1", "http://", "http://:80/v1"])
def test_a_malformed_url_is_one_error(url):
    with pytest.raises(EndpointError) as info:
        Endpoint(url, "m")
    assert info.value.problems[0].key == "base_url" and "not a valid URL" in str(info.value)
    with pytest.raises(EndpointError, match="not a valid URL"):
        probe(url, "m", where="r.yaml", key="rewards.0.args.base_url")


@pytest.mark.fault  # a fault probe: make faults runs it
def test_probe_is_bounded_in_wall_time_against_a_trickling_server():
    """`check`'s probe took 65 s for its 5 s: its whole wall time is now bounded."""
    with FakeOpenAI(models=["m"], default="trickle:0.2", hang_limit=30) as server:
        start = time.monotonic()
        with pytest.raises(EndpointError, match="no answer"):
            probe(server.base_url, "m", timeout=1.0)
        assert time.monotonic() - start < 3


def test_slow_but_within_timeout_succeeds():
    with FakeOpenAI(models=["m"], default="slow:0.3") as server:
        assert one(server, timeout=2.0) == ["fake: hi"]


def test_api_key_comes_from_the_named_variable_and_is_never_shown(monkeypatch, caplog):
    secret = "sk-test-9f8e7d6c5b4a"
    monkeypatch.setenv("GRPO_TEST_KEY", secret)
    caplog.set_level(logging.DEBUG)
    with FakeOpenAI(models=["m"], script=["ok", "401", "500"]) as server:
        ep = Endpoint(server.base_url, "m", api_key_env="GRPO_TEST_KEY", retries=0, max_concurrency=1)
        out = ep.run([ep.chat(MSG) for _ in range(3)])
        try:
            probe(server.base_url, "nope", api_key_env="GRPO_TEST_KEY")
        except EndpointError as exc:
            out.append(exc)
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {secret}"
    shown = " ".join(str(x) for x in out) + repr(ep) + caplog.text
    assert isinstance(out[1], EndpointError) and secret not in shown


@pytest.mark.parametrize("name", ["sk-abc123", "my key", "1ABC", "", None])
def test_api_key_env_must_be_a_set_variable_name(monkeypatch, name):
    monkeypatch.delenv("GRPO_UNSET_KEY", raising=False)
    if name is None:
        assert api_key(None) == "EMPTY"
        with pytest.raises(EndpointError, match="GRPO_UNSET_KEY is not set"):
            api_key("GRPO_UNSET_KEY")
        return
    if name == "":
        assert api_key(name) == "EMPTY"
        return
    with pytest.raises(EndpointError, match="NAME of an environment variable") as info:
        api_key(name)
    assert name not in str(info.value)  # it may be the key itself


@pytest.mark.parametrize(
    "kwargs, key",
    [
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"max_concurrency": 1.5}, "max_concurrency"),
        ({"max_concurrency": True}, "max_concurrency"),
        ({"max_concurrency": "8"}, "max_concurrency"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": -1}, "timeout"),
        ({"timeout": "5"}, "timeout"),
        ({"timeout": float("nan")}, "timeout"),
        ({"retries": -1}, "retries"),
        ({"retries": 1.0}, "retries"),
        ({"base_url": "127.0.0.1:8000/v1"}, "base_url"),
        ({"base_url": ""}, "base_url"),
        ({"base_url": None}, "base_url"),
    ],
)
def test_bad_settings_are_one_error(kwargs, key):
    args = {"base_url": "http://127.0.0.1:1/v1", "model": "m", **kwargs}
    with pytest.raises(EndpointError) as info:
        Endpoint(args.pop("base_url"), args.pop("model"), **args)
    assert info.value.problems[0].key == key and "\n" not in str(info.value)


def test_one_endpoint_serves_several_event_loops():
    with FakeOpenAI(models=["m"]) as server:
        ep = Endpoint(server.base_url, "m")
        assert asyncio.run(ep.chat(MSG)) == ["fake: hi"]
        assert asyncio.run(ep.complete("x")) == ["fake: x"]
        assert ep.run([ep.chat(MSG)]) == [["fake: hi"]]


def test_run_works_from_inside_a_running_loop():  # as in a notebook
    with FakeOpenAI(models=["m"]) as server:
        ep = Endpoint(server.base_url, "m")

        async def inside():
            return ep.run([ep.chat(MSG), ep.complete("x")])

        assert asyncio.run(inside()) == [["fake: hi"], ["fake: x"]]


def test_probe_happy_path_and_wrong_model():
    with FakeOpenAI(models=["Qwen/Qwen2.5-0.5B", "other"]) as server:
        assert probe(server.base_url, "other") == ["Qwen/Qwen2.5-0.5B", "other"]
        with pytest.raises(EndpointError, match=r"not served .*mean 'Qwen/Qwen2.5-0.5B'.*serves: Qwen") as info:
            probe(server.base_url, "Qwen/Qwen2.5-0.5b", where="r.yaml")
    assert info.value.problems[0].key == "model" and str(info.value).startswith("r.yaml: model:")


def test_probe_hints_at_v1_and_refused_connections():
    with FakeOpenAI(models=["m"]) as server:
        with pytest.raises(EndpointError, match=r"try http://127.0.0.1:\d+/v1"):
            probe(server.base_url.removesuffix("/v1"), "m")
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(EndpointError, match="cannot reach .*is the server running"):
        probe(f"http://127.0.0.1:{port}/v1", "m", timeout=2)


@pytest.mark.parametrize(
    "behaviour, message", [("hang", "no answer .* within 0.5 s"), ("401", "refused the API key"), ("malformed", "")]
)
def test_probe_fails_fast_with_one_line(behaviour, message):
    with FakeOpenAI(models=["m"], default=behaviour) as server:
        start = time.monotonic()
        with pytest.raises(EndpointError, match=message):
            probe(server.base_url, "m", timeout=0.5)
        assert time.monotonic() - start < 3 and len(server.requests) == 1


def test_missing_openai_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)  # what an environment without the extra sees
    with pytest.raises(EndpointError, match=r"grpo-trl\[endpoint\]"):
        Endpoint("http://127.0.0.1:1/v1", "m")
    with pytest.raises(EndpointError, match=r"grpo-trl\[endpoint\]"):
        probe("http://127.0.0.1:1/v1", "m")


class _EchoKey(BaseHTTPRequestHandler):
    """A server that quotes the key back in its 401 body, as OpenAI does ("Incorrect API key provided: KEY")."""

    def _echo(self):
        key = self.headers.get("Authorization", "").removeprefix("Bearer ")
        body = json.dumps({"error": {"message": f"Incorrect API key provided: {key}"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _echo

    def log_message(self, *args):
        pass


@pytest.fixture
def echo_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoKey)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()


def test_an_error_line_never_shows_the_key_the_server_echoes(echo_url, monkeypatch):
    monkeypatch.setenv("GRPO_ECHO_VAR", "mykey-SEKRIT-2f9c81d0")  # a name redact would not guess: the value is known
    ep = Endpoint(echo_url, "m", api_key_env="GRPO_ECHO_VAR", retries=0)
    errors = ep.run([ep.chat(MSG)])
    with pytest.raises(EndpointError) as probed:
        probe(echo_url, "m", api_key_env="GRPO_ECHO_VAR")
    lines = format_error_lines(errors[0]) + format_error_lines(probed.value)
    assert all("SEKRIT" not in line for line in lines) and "<redacted>" in " ".join(lines), lines


@pytest.mark.slow
def test_eval_endpoint_error_never_prints_the_key_the_server_echoes(echo_url, tmp_path, capsys, monkeypatch):
    from grpo_trl.cli import main as cli_main
    from tests.recipe.test_recipe import BASE, write

    monkeypatch.setenv("GRPO_ECHO_VAR", "mykey-SEKRIT-2f9c81d0")
    args = ["eval", str(write(tmp_path, BASE)), "--split", "train", "--backend", "endpoint", "--base-url", echo_url]
    rc = cli_main([*args, "--model", "m", "--api-key-env", "GRPO_ECHO_VAR", "--output-dir", str(tmp_path / "ev")])
    err = capsys.readouterr().err
    assert rc == 1 and "SEKRIT" not in err, err
