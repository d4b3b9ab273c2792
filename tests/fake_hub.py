"""A fake Hugging Face Hub on 127.0.0.1 for tests: a stand-in for an EXTERNAL service (huggingface.co), so that a
run with ``trainer.push_to_hub`` can go through transformers' and huggingface_hub's real client code (``HF_ENDPOINT``
pointed here) and the test can see exactly what was uploaded. Nothing leaves the machine.

It answers the calls a push makes: ``POST /api/repos/create``, ``/api/validate-yaml``,
``/api/models/<repo>/preupload/<rev>`` (every file ``regular``: sent inline, no LFS or Xet storage) and
``/api/models/<repo>/commit/<rev>`` (the files' contents are kept in ``files``); anything else is a 404, recorded in
``requests`` like every request.
"""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fake_openai import QuietServer


class FakeHub:
    """Context manager running the fake Hub in a daemon thread; ``endpoint`` is what ``HF_ENDPOINT`` takes."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []
        self.files: dict[str, bytes] = {}  # path in the repo -> content, from every commit
        self.repos: list[str] = []
        self._server: QuietServer | None = None

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeHub:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hub.requests.append(("POST", self.path))
                path = self.path.split("?")[0]
                if path == "/api/repos/create":
                    body = json.loads(raw or b"{}")
                    repo = "/".join(p for p in (body.get("organization"), body["name"]) if p)
                    hub.repos.append(repo)
                    return self._reply(200, {"url": f"{hub.endpoint}/{repo}", "name": repo, "id": repo})
                if path == "/api/validate-yaml":  # the card's front matter, checked before a commit
                    return self._reply(200, {"errors": [], "warnings": []})
                if path.startswith("/api/models/") and "/preupload/" in path:
                    files = json.loads(raw)["files"]
                    modes = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]
                    return self._reply(200, {"files": modes})
                if path.startswith("/api/models/") and "/commit/" in path:
                    for line in raw.decode().splitlines():
                        item = json.loads(line)
                        if item.get("key") == "file":
                            value = item["value"]
                            hub.files[value["path"]] = base64.b64decode(value["content"])
                    repo = path.removeprefix("/api/models/").split("/commit/")[0]
                    url = f"{hub.endpoint}/{repo}/commit/{'0' * 40}"
                    return self._reply(200, {"commitUrl": url, "commitOid": "0" * 40, "pullRequestUrl": None})
                return self._reply(404, {"error": f"the fake Hub has no {path}"})

            def do_GET(self) -> None:  # noqa: N802
                hub.requests.append(("GET", self.path))
                self._reply(404, {"error": f"the fake Hub has no {self.path}"})

        self._server = QuietServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
