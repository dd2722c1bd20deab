"""Differential harness for grpcio's retries (issue 32): a fault-injecting gRPC server on
127.0.0.1 and a grpcio client with a service config, both in this process, driven by a case file.

Usage: python3 harness.py CASES.json > RESULTS.json (exit 3 when grpcio does not import)

Each case gives a service config and a fault schedule: for call c and attempt a (1 = first,
from the server's view: 1 + `grpc-previous-rpc-attempts`), what the server answers. The server
records every attempt it receives (call, attempt, time since the call started); the client
records each call's final status. Nothing here is random except when a case asks for
`failure_probability` (seeded), for the probe of issue 32.

Failure styles (how the handler fails, which decides what grpc-core can retry):
- "abort": `context.abort(code, details)` straight away (grpcio sends the status alone, a
  Trailers-Only response when nothing else was queued).
- "set_code": `context.set_code(code)` and return a response: grpcio sends the response
  headers and the message before the status.
- A scheduled step may carry `pushback_ms`: the status's trailers then hold
  `grpc-retry-pushback-ms` (gRFC A6 server pushback; a negative value asks for no retry).
- "headers_first": `context.send_initial_metadata(())` then abort: the client has received
  response headers, so grpc-core commits the call (gRFC A6) and never retries it.
"""

import json
import os
import random
import sys
import threading
import time
from concurrent import futures

try:
    import grpc
except ImportError as e:
    sys.stderr.write(f"grpcio does not import: {e}\n")
    sys.exit(3)

METHOD = "/faultline.Probe/Call"


class Server:
    def __init__(self, case):
        self.case = case
        self.lock = threading.Lock()
        self.attempts = []  # (call, attempt, t_s since the call's first attempt)
        self.first_seen = {}
        self.rng = random.Random(case.get("seed", 1))

    def answer(self, call, attempt):
        """The action for this attempt: (status name, style, delay_s)."""
        p = self.case.get("failure_probability")
        if p is not None:
            with self.lock:
                fail = self.rng.random() < p
            return ("UNAVAILABLE" if fail else "OK", self.case.get("style", "abort"), 0.0)
        schedule = self.case["schedule"]
        per_call = schedule[call % len(schedule)]
        if attempt - 1 < len(per_call):
            step = per_call[attempt - 1]
            return (step["status"], step.get("style", "abort"), step.get("delay_s", 0.0))
        return ("OK", "abort", 0.0)

    def handle(self, request, context):
        now = time.monotonic()
        call = int(request.decode())
        md = dict(context.invocation_metadata())
        attempt = 1 + int(md.get("grpc-previous-rpc-attempts", "0"))
        status, style, delay_s = self.answer(call, attempt)
        with self.lock:
            t0 = self.first_seen.setdefault(call, now)
            self.attempts.append(
                {"call": call, "attempt": attempt, "t_s": now - t0, "status": status, "style": style}
            )
        if delay_s > 0:
            time.sleep(delay_s)
        if status == "OK":
            return b"ok"
        if "pushback_ms" in step_extra(self, call, attempt):
            pushback = str(step_extra(self, call, attempt)["pushback_ms"])
            context.set_trailing_metadata((("grpc-retry-pushback-ms", pushback),))
        code = getattr(grpc.StatusCode, status)
        details = f"scheduled {status} for call {call} attempt {attempt}"
        if style == "set_code":
            # The handler sets the status and returns a response, as handlers that report
            # errors without raising do: grpcio sends the message, then the status.
            context.set_code(code)
            context.set_details(details)
            return b""
        if style == "headers_first":
            context.send_initial_metadata(())
        context.abort(code, details)


def step_extra(server, call, attempt):
    """The schedule's own entry for this attempt (empty for random cases and past its end)."""
    if "schedule" not in server.case:
        return {}
    per_call = server.case["schedule"][call % len(server.case["schedule"])]
    return per_call[attempt - 1] if attempt - 1 < len(per_call) else {}


def run_case(case):
    server_state = Server(case)
    handler = grpc.method_handlers_generic_handler(
        "faultline.Probe", {"Call": grpc.unary_unary_rpc_method_handler(server_state.handle)}
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        options = [
            ("grpc.enable_retries", 1),
            ("grpc.service_config", json.dumps(case["service_config"])),
        ]
        calls = []
        with grpc.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
            stub = channel.unary_unary(METHOD)
            for c in range(case["calls"]):
                started = time.monotonic()
                try:
                    stub(str(c).encode(), timeout=case.get("deadline_s", 30))
                    status = "OK"
                except grpc.RpcError as e:
                    status = e.code().name
                calls.append({"call": c, "status": status, "elapsed_s": time.monotonic() - started})
    finally:
        server.stop(None)
    return {"name": case["name"], "calls": calls, "attempts": server_state.attempts}


def main():
    cases = json.load(open(sys.argv[1]))
    out = {"grpcio": grpc.__version__, "cases": [run_case(c) for c in cases]}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    sys.stdout.flush()
    # grpcio's threads can hold interpreter shutdown for a long time; the results are out.
    os._exit(0)


if __name__ == "__main__":
    main()
