"""A counting reverse proxy in front of a real server: every POST it forwards, by request body.

The Ray tests use one per llama-server endpoint to see, from outside accord, which
requests reached a model and how often: a resumed run must send none that the cache
already answered, and a rerun none at all. A body is identified by the sha256 of its
canonical JSON, so ``body_key(request["body"])`` of a cached request names it.
"""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.error
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from samples.canonical import canonical_json


def body_key(body: Any) -> str:
    return hashlib.sha256(canonical_json(body)).hexdigest()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


class CountingProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.forwarded: Counter = Counter()
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                with proxy._lock:
                    proxy.forwarded[body_key(json.loads(raw))] += 1
                request = urllib.request.Request(proxy.upstream + self.path, data=raw, method="POST",
                                                 headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(request, timeout=600) as response:
                        status, data = response.status, response.read()
                except urllib.error.HTTPError as error:
                    status, data = error.code, error.read()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = True

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def calls(self) -> int:
        with self._lock:
            return sum(self.forwarded.values())

    def start(self) -> CountingProxy:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
