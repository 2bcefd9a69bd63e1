"""A small real HTTP server speaking the OpenAI chat API, scripted per request, for client tests."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """What the server does with one request."""

    status: int = 200
    body: Any = None
    """A dict is sent as JSON; a str is sent as is; None builds a normal completion."""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    gate: threading.Event | None = None
    """Hold the reply until the test sets this event (a slow request, released when the test says so)."""
    drop: bool = False
    """Close the connection without answering (a reset mid-request)."""
    die: bool = False
    """Close the connection and shut the whole server down (later connections are refused)."""


def completion(texts: list[str], usage: dict[str, Any] | None = None, logprobs: Any = None) -> dict[str, Any]:
    """An OpenAI chat-completion object with one choice per text."""
    return {
        "id": "cmpl-test",
        "object": "chat.completion",
        "choices": [
            {
                "index": i,
                "message": {"role": "assistant", "content": t},
                "finish_reason": "stop",
                "logprobs": logprobs,
            }
            for i, t in enumerate(texts)
        ],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 2 * len(texts), "total_tokens": 10},
    }


Script = Callable[[int, dict[str, Any]], Reply]


def echo_seed(index: int, body: dict[str, Any]) -> Reply:
    """Answer with the seed the request carried, ignoring ``n`` like llama.cpp."""
    return Reply(body=completion([f"seed={body.get('seed')}"]))


class FakeOpenAIServer:
    """``ThreadingHTTPServer`` on 127.0.0.1, port 0; ``script(i, body)`` decides the reply to request i."""

    def __init__(self, script: Script = echo_seed):
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.get_routes: dict[str, str] = {}
        """Bodies for GET paths other than ``/v1/models`` (e.g. ``/metrics``)."""
        self.get_delay_s = 0.0
        """Seconds every GET waits first (a stuck server answers nothing)."""
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                time.sleep(outer.get_delay_s)
                if self.path in outer.get_routes:
                    self._send(200, outer.get_routes[self.path], {})
                else:
                    self._send(200, json.dumps({"object": "list", "data": [{"id": "fake"}]}), {})

            def do_POST(self) -> None:
                if outer._stopped:  # a kept-alive connection to a server that has died
                    self.close_connection = True
                    self.connection.close()
                    return
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                body = json.loads(raw)
                with outer._lock:
                    index = len(outer.requests)
                    outer.requests.append(body)
                reply = outer.script(index, body)
                time.sleep(reply.delay_s)
                if reply.gate is not None:
                    reply.gate.wait(timeout=60)  # bounded: a failing test must not hang the server thread forever
                if reply.die:
                    threading.Thread(target=outer.stop, daemon=True).start()
                if reply.drop or reply.die:
                    self.close_connection = True
                    self.connection.close()
                    return
                payload = reply.body if reply.body is not None else completion(["ok"])
                text = payload if isinstance(payload, str) else json.dumps(payload)
                self._send(reply.status, text, reply.headers)

            def _send(self, status: int, text: str, headers: dict[str, str]) -> None:
                data = text.encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (timeout test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self._stopped = False

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self.httpd.shutdown()
        self.httpd.server_close()
