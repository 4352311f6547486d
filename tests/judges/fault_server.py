"""A small real HTTP server speaking the OpenAI chat and Anthropic Messages shapes, with faults.

A request's behaviour is scripted by a directive in its user message,
``#fault:A,B,C``: the n-th attempt of that same request gets action n (the last one
repeats). Actions: ``ok`` or ``ok:WORD`` (200 with that reply), ``429`` or ``429:SECS``
(rate limited, Retry-After SECS), ``500``, ``slow:SECS`` (answer after SECS),
``malformed`` (200 with a body that is not JSON), ``reset`` (TCP reset, no response),
``400`` (a client error: not retryable), ``ctx:N:M`` (llama-server's refusal of a prompt of N tokens
in a context of M: HTTP 400, type ``exceed_context_size_error``, as server-context.cpp sends it).
Without a directive a request gets ``ok`` after ``delay_s``. Every attempt is
recorded (request body, action, time) for the tests to assert on.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_DIRECTIVE = re.compile(r"#fault:([\w:.,-]+)")


@dataclass
class Attempt:
    key: str
    user: str
    action: str
    path: str
    at: float


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default listen backlog (5) is below the tests' concurrency: on a loaded machine a
    # dropped connection is retried by the kernel a second later, which a test would see as
    # a timeout the script never asked for.
    request_queue_size = 128


@dataclass
class FaultServer:
    default_reply: str = "YES"
    delay_s: float = 0.0
    attempts: list[Attempt] = field(default_factory=list)
    released: threading.Event = field(default_factory=threading.Event)
    """Cleared, every ``ok`` answer waits (after ``delay_s``) until it is set again: a run stays mid-call for
    as long as a test needs, however loaded the machine, instead of for a guessed number of seconds."""

    def __post_init__(self) -> None:
        self.released.set()
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                server._handle(self, body)

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> FaultServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.released.set()  # held answers end (to clients that may be gone) instead of blocking the close
        self.httpd.shutdown()
        self.httpd.server_close()

    # ---- bookkeeping the tests read
    def actions_for(self, user: str) -> list[str]:
        """Actions taken for every attempt whose user message is exactly ``user``, in order."""
        with self._lock:
            return [a.action for a in self.attempts if a.user == user]

    def successes(self) -> dict[str, int]:
        """How many 200 answers each distinct user message received."""
        counts: dict[str, int] = {}
        with self._lock:
            for attempt in self.attempts:
                if attempt.action.startswith(("ok", "slow")):
                    counts[attempt.user] = counts.get(attempt.user, 0) + 1
        return counts

    # ---- request handling
    def _handle(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        request = json.loads(raw)
        anthropic = handler.path.rstrip("/").endswith("/messages")
        user = request["messages"][-1]["content"]
        user = user if isinstance(user, str) else " ".join(b.get("text", "") for b in user)
        key = hashlib.sha256(raw).hexdigest()
        match = _DIRECTIVE.search(user)
        script = match.group(1).split(",") if match else ["ok"]
        with self._lock:
            n = self._counts.get(key, 0)
            self._counts[key] = n + 1
            action = script[min(n, len(script) - 1)]
            self.attempts.append(Attempt(key=key, user=user, action=action, path=handler.path, at=time.time()))
        name, _, arg = action.partition(":")
        try:
            if name == "reset":
                handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                handler.connection.close()
                handler.close_connection = True
                return
            if name == "429":
                self._send(handler, 429, {"error": {"message": "rate limited", "type": "rate_limit_error"}},
                           headers={"Retry-After": arg or "1"})
                return
            if name in ("500", "400"):
                self._send(handler, int(name), {"error": {"message": f"error {name}", "type": "api_error"}})
                return
            if name == "ctx":
                needed, _, context = arg.partition(":")
                self._send(handler, 400, {"error": {
                    "code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": int(needed),
                    "n_ctx": int(context), "message": f"request ({needed} tokens) exceeds the available context size "
                                                      f"({context} tokens), try increasing it"}})
                return
            if name == "malformed":
                self._send_bytes(handler, 200, b'{"choices": [ {"message": ')
                return
            wait = float(arg) if name == "slow" else self.delay_s
            if wait:
                time.sleep(wait)
            self.released.wait()
            reply = arg if name == "ok" and arg else self.default_reply
            self._send(handler, 200, _anthropic_body(request, reply) if anthropic else _openai_body(request, reply))
        except (BrokenPipeError, ConnectionResetError, OSError):
            handler.close_connection = True

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        FaultServer._send_bytes(handler, status, json.dumps(payload).encode(), headers)

    @staticmethod
    def _send_bytes(handler: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()


def _tokens(request: dict) -> int:
    return sum(len(str(m.get("content", "")).split()) for m in request.get("messages", []))


def _openai_body(request: dict, reply: str) -> dict:
    return {
        "id": "chatcmpl-fault", "object": "chat.completion", "created": int(time.time()), "model": request.get("model", ""),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": _tokens(request), "completion_tokens": 1, "total_tokens": _tokens(request) + 1},
    }


def _anthropic_body(request: dict, reply: str) -> dict:
    return {
        "id": "msg_fault", "type": "message", "role": "assistant", "model": request.get("model", ""),
        "content": [{"type": "text", "text": reply}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": _tokens(request), "output_tokens": 1},
    }
