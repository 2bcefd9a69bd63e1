"""The command agent's model proxy: an OpenAI-compatible endpoint of one rollout, on a Unix socket in its channel.

The program in the sandbox reaches it through the forwarder (agent/forwarder.py) at ``$OPENAI_BASE_URL``. Every
``POST /v1/chat/completions`` goes through the rollout's ``Conversation``, so it is counted, limited, seeded and
recorded exactly as a call of the built-in agents: the step, token and wall-time limits are checked before it, the
call gets the rollout's per-step seed and the run's sampling (what the program asks for is recorded as ignored),
the usage (cached tokens too) and model time are summed, and the request's new messages and the reply go into the
trajectory. ``GET /v1/models`` names the run's model. A call over a limit is refused with HTTP 429 (``code``: the
limit) and the proxy closes: the forwarder stops the program at its next connection. A failure of the model
server (infrastructure) is HTTP 503 to the program and ends the rollout as infrastructure; a conversation the model
refuses (too long, unusable) is an error the program sees and may act on.
"""

from __future__ import annotations

import json
import os
import socketserver
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from agentbon.agent.base import Conversation, LimitsExceeded
from agentbon.errors import ContextLengthExceeded, InfraError, ModelError, ProxyFailure
from agentbon.protocols import ChatResponse, Model

READ = ("model", "messages", "stream", "stream_options")
"""Request keys the proxy reads; every other one (sampling, tools, ``n``) is recorded as ignored."""


def text_of(content: Any) -> str:
    """A message's content as text (the text parts of a list of parts)."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def error(status: int, message: str, kind: str, code: str | None = None) -> tuple[int, dict[str, Any]]:
    """An OpenAI-style error body."""
    return status, {"error": {"message": message, "type": kind, "code": code, "param": None}}


class ModelProxy:
    """Serves one rollout's program on the Unix socket ``path`` while open (a context manager)."""

    def __init__(self, path: str, conv: Conversation, model: Model):
        self.path, self.conv, self.model = path, conv, model
        self.limit: LimitsExceeded | None = None
        """The limit a call ran into (the proxy refuses every call after it)."""
        self.failure: InfraError | None = None
        """What failed on agentbon's side (the model server, the proxy itself): the rollout is infrastructure."""
        self.requests = 0
        self._context: list[dict[str, str]] = []
        """The last call's messages and its reply: a request that continues them adds only what is new."""
        self._lock = threading.Lock()
        self._server = _Server(path, _handler(self))
        os.chmod(path, 0o666)  # the sandbox's user is another uid
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.1,), daemon=True)

    def __enter__(self) -> ModelProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._unlink()

    def _unlink(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": self.model.name, "object": "model", "owned_by": "agentbon"}]}

    def complete(self, body: Any) -> tuple[int, dict[str, Any]]:
        """One chat completion for the program: the status and body to answer with."""
        with self._lock:
            self.requests += 1
            if self.limit is not None or self.failure is not None:
                return error(429, "the rollout's model proxy is closed", "insufficient_quota", "closed")
            messages = body.get("messages") if isinstance(body, dict) else None
            if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
                return error(400, "messages: expected a list of message objects", "invalid_request_error")
            wire = [{"role": str(m.get("role", "user")), "content": text_of(m.get("content"))} for m in messages]
            self._record_request(wire)
            try:
                response, extra = self.conv.call(self.model, wire)
            except LimitsExceeded as e:
                self.limit = e
                self._unlink()  # the forwarder stops the program at its next connection
                return error(429, str(e), "insufficient_quota", e.status)
            except ContextLengthExceeded as e:
                return error(400, str(e), "invalid_request_error", "context_length_exceeded")
            except ModelError as e:
                return error(502, f"the model answered unusably: {e}", "model_error")
            except InfraError as e:
                self.failure = e
                self._unlink()
                return error(503, f"the model server failed: {e}", "server_error")
            except Exception as e:  # the proxy's own fault, never the program's
                self.failure = ProxyFailure(f"the model proxy failed: {type(e).__name__}: {e}")
                self._unlink()
                return error(500, str(self.failure), "server_error")
            reply = {"role": "assistant", "content": response.content}
            self.conv.messages.append(
                {**reply, "extra": {**extra, "ignored": sorted(k for k in body if k not in READ)}}
            )
            self._context = [*wire, reply]
            return 200, self._completion(response, extra["step"])

    def _record_request(self, wire: list[dict[str, str]]) -> None:
        """The request's messages that the trajectory does not hold yet (all of them where the program changed the
        conversation it sent before: the first is marked ``new_context``)."""
        known = self._context
        fresh = wire[: len(known)] != known
        for i, m in enumerate(wire if fresh else wire[len(known) :]):
            first_user = m["role"] == "user" and not any(x["role"] == "user" for x in self.conv.messages)
            kind = "system" if m["role"] == "system" else "instance" if first_user else "request"
            marks = {"new_context": True} if fresh and known and i == 0 else {}
            self.conv.add(m["role"], m["content"], kind=kind, **marks)

    def _completion(self, response: ChatResponse, step: int) -> dict[str, Any]:
        u = response.usage
        return {
            "id": f"agentbon-{step}", "object": "chat.completion", "created": int(time.time()), "model": self.model.name,
            "choices": [{
                "index": 0, "message": {"role": "assistant", "content": response.content},
                "finish_reason": response.finish_reason or "stop", "logprobs": None,
            }],
            "usage": {
                "prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
                "total_tokens": u.prompt_tokens + u.completion_tokens,
                "prompt_tokens_details": {"cached_tokens": u.cached_tokens},
            },
        }  # fmt: skip


def stream_of(completion: dict[str, Any]) -> bytes:
    """A completion as server-sent events: one chunk with the whole reply, one with the finish and the usage."""
    choice = completion["choices"][0]
    head = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    chunks = [
        {**head, "choices": [{"index": 0, "delta": choice["message"], "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}],
         "usage": completion["usage"]},
    ]  # fmt: skip
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True


def _handler(proxy: ModelProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass  # a Unix socket has no client address to log

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, json.dumps(proxy.models()).encode())
            else:
                self._send(*_json(*error(404, f"no such path: {self.path}", "invalid_request_error")))

        def do_POST(self) -> None:
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._send(*_json(*error(404, f"no such path: {self.path}", "invalid_request_error")))
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            except ValueError as e:
                self._send(*_json(*error(400, f"the body is not JSON: {e}", "invalid_request_error")))
                return
            status, answer = proxy.complete(body)
            if status == 200 and isinstance(body, dict) and body.get("stream"):
                self._send(200, stream_of(answer), "text/event-stream")
            else:
                self._send(*_json(status, answer))

        def _send(self, status: int, data: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _json(status: int, body: dict[str, Any]) -> tuple[int, bytes]:
    return status, json.dumps(body).encode()
