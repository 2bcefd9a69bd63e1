"""A scripted OpenAI-compatible model server over real HTTP, with faults switched on while it runs.

For benchmarks and end-to-end tests that need the real ``OpenAIClient`` on the wire (``benchmarks/chaos_bench.py``):
a ``ThreadingHTTPServer`` on 127.0.0.1 whose chat replies come from ``script(body)``, and whose faults can be turned
on for a while (``fail``): HTTP 500, no reply within the client's timeout, a connection dropped without a reply.
Every request is logged as a ``Served`` record with the client's port (to find the process that sent it). Hooks run
before each reply, in the handler's thread, so a caller can act at an exact moment of a conversation. Never on the
product path.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Fault = Literal["http500", "timeout", "drop"]
FAULTS: tuple[Fault, ...] = ("http500", "timeout", "drop")


@dataclass
class Served:
    """One chat request as the server saw it."""

    index: int
    """Order of arrival, from 0."""
    seed: int | None
    """The request's ``seed`` (agentbon sends one per call: rollout seed and step)."""
    turns: int
    """Assistant messages already in the conversation (the agent's step)."""
    client_port: int
    """The sender's TCP port on 127.0.0.1."""
    at: float
    """``time.time()`` on arrival."""
    fault: str = ""
    """The fault it got (``http500``, ``timeout``, ``drop``); empty when answered normally."""


Script = Callable[[dict[str, Any]], str]
Hook = Callable[[Served, dict[str, Any]], None]


def completion(text: str, prompt_tokens: int) -> dict[str, Any]:
    """An OpenAI chat-completion object with one choice."""
    return {
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()), "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split()),
                  "total_tokens": prompt_tokens + len(text.split())},
    }  # fmt: skip


class ScriptedServer:
    """Serves ``POST /v1/chat/completions`` from ``script`` and ``GET /v1/models`` naming ``model``; 127.0.0.1, port 0.

    ``hang_s``: how long a ``timeout`` fault keeps a request before closing it unanswered (set it above the
    client's timeout).
    """

    def __init__(self, script: Script, model: str = "scripted", hang_s: float = 10.0):
        self.script, self.model, self.hang_s = script, model, hang_s
        self.requests: list[Served] = []
        self.hooks: list[Hook] = []
        """Called with each request before its reply, in order; they may block (the reply waits)."""
        self._lock = threading.Lock()
        self._fault: Fault | None = None
        self._fault_until = 0.0
        self._fault_left = 0
        self._stopping = threading.Event()
        self.httpd = _Quiet(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    # ------------------------------------------------------------------ faults
    def fail(self, fault: Fault, seconds: float, requests: int | None = None) -> None:
        """Answer every request with ``fault`` for ``seconds`` (and at most ``requests`` of them, when given)."""
        with self._lock:
            self._fault, self._fault_until = fault, time.monotonic() + seconds
            self._fault_left = requests if requests is not None else 1 << 30

    def heal(self) -> None:
        """Answer normally again."""
        with self._lock:
            self._fault = None

    def _take_fault(self) -> Fault | None:
        with self._lock:
            if self._fault is None or time.monotonic() >= self._fault_until or self._fault_left <= 0:
                self._fault = None
                return None
            self._fault_left -= 1
            return self._fault

    # --------------------------------------------------------------- requests
    def _chat(self, body: dict[str, Any], client_port: int) -> tuple[Fault | None, str]:
        messages = body.get("messages") or []
        with self._lock:
            served = Served(
                index=len(self.requests),
                seed=body.get("seed"),
                client_port=client_port,
                at=time.time(),
                turns=sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant"),
            )
            self.requests.append(served)
        for hook in list(self.hooks):
            hook(served, body)
        fault = self._take_fault()
        served.fault = fault or ""
        if fault:
            return fault, ""
        prompt = sum(len(str(m.get("content", "")).split()) for m in messages if isinstance(m, dict))
        return None, json.dumps(completion(self.script(body), prompt))

    def faulted(self) -> list[Served]:
        """Requests that got a fault instead of a reply."""
        with self._lock:
            return [r for r in self.requests if r.fault]

    # --------------------------------------------------------------- lifecycle
    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; requests held by a ``timeout`` fault are closed at once."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Quiet(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away mid-request (its process was killed): nothing to report


def _handler(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, json.dumps({"object": "list", "data": [{"id": server.model, "object": "model"}]}))
            else:
                self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}))

        def do_POST(self) -> None:
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
            except ValueError:
                self._send(400, json.dumps({"error": {"message": "body is not JSON"}}))
                return
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}))
                return
            fault, text = server._chat(body, self.client_address[1])
            if fault == "http500":
                self._send(500, json.dumps({"error": {"message": "scripted fault: internal server error"}}))
                return
            if fault == "timeout":
                server._stopping.wait(server.hang_s)
            if fault in ("timeout", "drop"):
                self.close_connection = True
                self.connection.close()
                return
            self._send(200, text)

        def _send(self, status: int, text: str) -> None:
            data = text.encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the client went away (it timed out, or its process was killed)

    return Handler
