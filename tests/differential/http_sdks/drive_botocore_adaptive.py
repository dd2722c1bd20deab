"""Drives a real botocore client in adaptive retry mode (STS GetCallerIdentity,
retries={'mode': 'adaptive'}) through every case of botocore_adaptive_cases.json against
server.py and prints, as one JSON line, what its client-side rate limiter did: each send's
time and the wait its token bucket imposed, and each answer's time with the limiter's
allowed rate, measured rate and whether it was on afterwards.

    python3 drive_botocore_adaptive.py

The limiter runs on a virtual clock, so a case of minutes takes a fraction of a second and
its times are exact: `botocore/retries/bucket.py`'s `Clock` is replaced by one whose time
moves only when botocore waits (the token bucket's condition wait, the retry backoff's
`time.sleep` in `botocore/endpoint.py`) or when the case says so (a call's start, `at_s`,
and each attempt's length, `attempt_s`). botocore's own code does the rest, unchanged.
Exit 3 (and the reason on stdout) when botocore does not import or is not the pinned version.
"""

import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from drive_botocore import OK_BODY, load, make_client, outcome, wire  # noqa: E402
from server import Schedule, serve  # noqa: E402


RESOLUTION_S = 1e-9


class VirtualClock:
    """`bucket.Clock`'s interface: time moves when something sleeps on it."""

    now = 0.0

    def current_time(self):
        return VirtualClock.now

    def sleep(self, seconds):
        VirtualClock.now += seconds


class VirtualCondition:
    """`threading.Condition` for the token bucket: a wait moves the virtual clock."""

    def __init__(self, lock):
        self._lock = lock

    def __enter__(self):
        return self._lock.__enter__()

    def __exit__(self, *exc):
        return self._lock.__exit__(*exc)

    def wait(self, seconds):
        # botocore re-checks after each wait; a real clock always moves on, so does this one
        # (a wait below the clock's resolution would otherwise leave it where it was).
        VirtualClock.now = max(VirtualClock.now + seconds, VirtualClock.now + RESOLUTION_S)
        return True

    def notify(self):
        pass


class VirtualThreading:
    """The `threading` module as `bucket.py` sees it."""

    Lock = staticmethod(threading.Lock)
    Condition = VirtualCondition


class VirtualTime:
    """The `time` module as botocore's endpoint sees it: a backoff moves the virtual clock."""

    def __init__(self, real):
        self.real = real

    def sleep(self, seconds):
        VirtualClock.now += seconds

    def __getattr__(self, name):
        return getattr(self.real, name)


def exact(x):
    """A float as the text `repr` gives, which reads back to the same double in Rust's
    `str::parse` (serde_json's own number reading may miss by one unit in the last place, enough
    to move an answer across a half-second bucket's edge)."""
    return repr(float(x))


def run_case(botocore, case, timeout_s):
    import time

    from botocore.retries import adaptive, bucket

    then = wire(case["then"]) if "then" in case else None
    schedule = Schedule([wire(e) for e in case["schedule"]], OK_BODY, then, "text/xml")
    server, base_url = serve(schedule)
    events = []
    attempt_s = case.get("attempt_s", 0.0)
    limiter_cls = adaptive.ClientRateLimiter
    sending, receiving = limiter_cls.on_sending_request, limiter_cls.on_receiving_response

    def on_sending_request(self, request, **kwargs):
        asked = VirtualClock.now
        sending(self, request, **kwargs)
        events.append({"send_s": exact(asked), "wait_s": exact(VirtualClock.now - asked)})

    def on_receiving_response(self, **kwargs):
        VirtualClock.now += attempt_s
        receiving(self, **kwargs)
        events.append({
            "answer_s": exact(VirtualClock.now),
            "allowed_rate": exact(self._token_bucket.max_rate),
            "measured_rate": exact(self._rate_clocker.measured_rate),
            "enabled": self._enabled,
        })

    saved = (bucket.Clock, bucket.threading, botocore.endpoint.time)
    limiter_cls.on_sending_request, limiter_cls.on_receiving_response = on_sending_request, on_receiving_response
    bucket.Clock, bucket.threading, botocore.endpoint.time = VirtualClock, VirtualThreading, VirtualTime(time)
    VirtualClock.now = case.get("start_s", 0.0)
    calls = []
    try:
        client = make_client("adaptive", base_url, timeout_s)
        for i in range(case["calls"]):
            VirtualClock.now = max(VirtualClock.now, case.get("start_s", 0.0) + i * case["gap_s"])
            first = len(schedule.requests)
            error = None
            try:
                client.get_caller_identity()
            except Exception as e:  # the outcome is recorded, whatever it is
                error = e
            calls.append({"attempts": len(schedule.requests) - first, "outcome": outcome(botocore, error)})
    finally:
        limiter_cls.on_sending_request, limiter_cls.on_receiving_response = sending, receiving
        bucket.Clock, bucket.threading, botocore.endpoint.time = saved
        server.shutdown()
        server.server_close()
    return {"name": case["name"], "calls": calls, "events": events}


def main():
    botocore, _ = load()
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "botocore_adaptive_cases.json")) as f:
        spec = json.load(f)
    cases = [run_case(botocore, case, spec["timeout_s"]) for case in spec["cases"]]
    print(json.dumps({"sdk": "botocore-adaptive", "version": botocore.__version__, "cases": cases}))


if __name__ == "__main__":
    main()
