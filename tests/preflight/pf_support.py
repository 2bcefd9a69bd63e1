"""Helpers of the preflight tests: tasks, and an OpenAI-compatible model list on loopback (a real HTTP server)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agentbon.types import Environment, RepoSource, Task, TestSet


def make_task(task_id: str = "t1", image: str | None = None) -> Task:
    """A task; only its image matters to the preflight (the repository is never read)."""
    return Task(
        task_id=task_id,
        problem_statement="fix it",
        repo=RepoSource(url="/nonexistent/repo", base_commit="HEAD"),
        environment=Environment(image=image),
        grade=TestSet(fail_to_pass=["tests/test_x.py::test_x"]),
    )


class ModelServer:
    """An OpenAI-compatible ``GET /v1/models`` on 127.0.0.1 serving ``models``; ``key`` set: other keys get 401."""

    def __init__(self, models: list[str], key: str | None = None):
        self.models, self.key = models, key
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if outer.key and self.headers.get("Authorization") != f"Bearer {outer.key}":
                    self._send(401, {"error": {"message": "invalid api key"}})
                elif self.path == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in outer.models]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> ModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
