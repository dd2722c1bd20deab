"""Drives a real client SDK through every case of cases.json against server.py and prints,
as one JSON line, what it did: attempts per call, the sleep it asked for before each retry,
the pause the server saw between attempts, and the call's outcome.

    python3 drive.py openai|anthropic

Exit 3 (and the reason on stdout) when the package does not import. The SDK's `time.sleep`
is wrapped to record each sleep's argument exactly; a sleep longer than LONG_S is recorded and
not waited (a 121 s Retry-After), every other one is waited in full.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server import Schedule, serve  # noqa: E402

MISSING = 3
LONG_S = 2.0
PINNED = {"openai": "3.63.0", "anthropic": "2.17.0"}

OPENAI_OK = {
    "id": "c", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
}
ANTHROPIC_OK = {
    "id": "m", "type": "message", "role": "assistant", "model": "m",
    "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}


class RecordingTime:
    """The `time` module as the SDK's retry loop sees it: `sleep` records its argument."""

    def __init__(self):
        self.sleeps = []

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        if seconds <= LONG_S:
            time.sleep(seconds)

    def __getattr__(self, name):
        return getattr(time, name)


def load(sdk):
    try:
        if sdk == "openai":
            import openai as package
            from openai import _base_client
        else:
            import anthropic as package
            from anthropic import _base_client
    except ImportError as e:
        print(f"{e}")
        sys.exit(MISSING)
    if package.__version__ != PINNED[sdk]:
        print(f"{sdk} {package.__version__} is installed; the harness pins {PINNED[sdk]}")
        sys.exit(MISSING)
    return package, _base_client


def call(sdk, package, base_url, timeout_s):
    if sdk == "openai":
        client = package.OpenAI(base_url=base_url, api_key="dummy", timeout=timeout_s)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    else:
        client = package.Anthropic(base_url=base_url, api_key="dummy", timeout=timeout_s)
        client.messages.create(model="m", max_tokens=1, messages=[{"role": "user", "content": "hi"}])


def outcome(package, error):
    if error is None:
        return "ok"
    if isinstance(error, package.APIStatusError):
        return f"status {error.status_code}"
    if isinstance(error, package.APITimeoutError):
        return "timeout"
    if isinstance(error, package.APIConnectionError):
        return "connection"
    return f"unexpected {type(error).__name__}: {error}"


def run_case(sdk, package, base_client, case, timeout_s):
    schedule = Schedule(case["schedule"], OPENAI_OK if sdk == "openai" else ANTHROPIC_OK)
    server, base_url = serve(schedule)
    recorder = RecordingTime()
    base_client.time = recorder
    error = None
    try:
        call(sdk, package, base_url, timeout_s)
    except Exception as e:  # the outcome is recorded, whatever it is
        error = e
    finally:
        base_client.time = time
        server.shutdown()
        server.server_close()
    requests = schedule.requests
    pauses = [later["arrived_s"] - earlier["answered_s"] for earlier, later in zip(requests, requests[1:])]
    return {
        "name": case["name"],
        "attempts": len(requests),
        "retry_counts": [r["retry_count"] for r in requests],
        "sleeps_s": recorder.sleeps,
        "pauses_s": pauses,
        "outcome": outcome(package, error),
    }


def main():
    sdk = sys.argv[1]
    package, base_client = load(sdk)
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "cases.json")) as f:
        spec = json.load(f)
    cases = [run_case(sdk, package, base_client, case, spec["timeout_s"]) for case in spec["cases"]]
    print(json.dumps({"sdk": sdk, "version": package.__version__, "cases": cases}))


if __name__ == "__main__":
    main()
