"""A fault-injecting HTTP server on 127.0.0.1 that answers a fixed schedule.

The n-th request of a case gets the n-th entry of its schedule: a status with optional
headers (`retry-after`, `retry-after-ms`, `x-should-retry`), a slow answer (`delay_s` before
the headers), or a dropped connection (`drop`). Past the schedule every request gets 200.
Each request is recorded with its arrival time and the time its answer ended (monotonic
seconds), and the `x-stainless-retry-count` (or botocore's `amz-sdk-request`) it carried.
An entry may bring its own `body` and `content_type` (botocore's XML errors); `then` is the
entry past the schedule (200 by default); an `ok_body` given as text is sent as it is.
"""

import json
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Schedule:
    def __init__(self, entries, ok_body, then=None, ok_content_type="application/json"):
        self.entries = entries
        self.ok_body = ok_body
        self.then = then or {"status": 200}
        self.ok_content_type = ok_content_type
        self.requests = []
        self.lock = threading.Lock()

    def next(self, retry_count, sdk_request=None):
        with self.lock:
            n = len(self.requests)
            record = {"arrived_s": time.monotonic(), "retry_count": retry_count, "sdk_request": sdk_request}
            self.requests.append(record)
        entry = self.entries[n] if n < len(self.entries) else self.then
        return entry, record


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: with Nagle's algorithm on, each answer on a
    # kept-alive connection waits for the client's delayed ACK (about 40 ms a request).
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("content-length", 0))
        self.rfile.read(length)
        schedule = self.server.schedule
        entry, record = schedule.next(self.headers.get("x-stainless-retry-count"), self.headers.get("amz-sdk-request"))
        if entry.get("delay_s"):
            time.sleep(entry["delay_s"])
        if entry.get("drop"):
            # A reset, not a clean close: the client sees a connection error.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            record["answered_s"] = time.monotonic()
            self.close_connection = True
            return
        status = entry["status"]
        content_type = entry.get("content_type", "application/json")
        if "body" in entry:
            body = entry["body"]
        elif status == 200 and isinstance(schedule.ok_body, str):
            body, content_type = schedule.ok_body, schedule.ok_content_type
        else:
            body = json.dumps(schedule.ok_body if status == 200 else {"error": {"type": "error", "message": "injected"}})
        body = body.encode()
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            for name, value in entry.get("headers", {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and left
        record["answered_s"] = time.monotonic()


def serve(schedule):
    """Starts a server for `schedule` on a free port; returns (server, base_url)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.schedule = schedule
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"
