"""Drives a real botocore client (STS GetCallerIdentity, retries={'mode': 'standard'}) through
every case of botocore_cases.json against server.py and prints, as one JSON line, what it did:
for each call of a case (all through one client, so they share its retry quota) the attempts,
the sleep botocore asked for before each retry, the pause the server saw, the call's outcome,
the `amz-sdk-request` each attempt carried, and the retry quota's capacity after the call.

    python3 drive_botocore.py

Exit 3 (and the reason on stdout) when botocore does not import or is not the pinned version.
botocore sleeps in `botocore/endpoint.py` (`_needs_retry`: `time.sleep(handler_response)`);
that module's `time` is wrapped to record each sleep's argument exactly. A case with
`"wait": false` records its sleeps without waiting them (the long quota schedules); otherwise a
sleep longer than LONG_S is recorded and not waited, every other one is waited in full.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server import Schedule, serve  # noqa: E402

MISSING = 3
LONG_S = 2.0
PINNED = "1.44.18"

OK_BODY = (
    '<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">'
    "<GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/f</Arn><UserId>AIDA</UserId>"
    "<Account>123456789012</Account></GetCallerIdentityResult>"
    "<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></GetCallerIdentityResponse>"
)


def error_body(code):
    return (
        '<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type>'
        f"<Code>{code}</Code><Message>injected</Message></Error><RequestId>r</RequestId></ErrorResponse>"
    )


def wire(entry):
    """A case's entry as the server sends it: an error becomes STS's XML error body, with its
    `code`, or without one the status as its code (what botocore names an empty 5xx by; an
    empty 4xx body does not parse), which no checker knows."""
    entry = dict(entry)
    if entry.get("status", 200) != 200 and not entry.get("drop"):
        entry["body"] = error_body(entry.pop("code", str(entry["status"])))
        entry["content_type"] = "text/xml"
    return entry


class RecordingTime:
    """The `time` module as botocore's endpoint sees it: `sleep` records its argument."""

    def __init__(self):
        self.sleeps = []
        self.wait = True

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        if self.wait and seconds <= LONG_S:
            time.sleep(seconds)

    def __getattr__(self, name):
        return getattr(time, name)


def load():
    # Nothing from this machine's AWS configuration may change the client.
    for name in ("AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE", "AWS_PROFILE", "AWS_DEFAULTS_MODE"):
        os.environ.pop(name, None)
    os.environ["AWS_CONFIG_FILE"] = os.devnull
    os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    try:
        import botocore
        import botocore.config
        import botocore.endpoint
        import botocore.exceptions
        import botocore.session
        from botocore.retries import quota
    except ImportError as e:
        print(f"{e}")
        sys.exit(MISSING)
    if botocore.__version__ != PINNED:
        print(f"botocore {botocore.__version__} is installed; the harness pins {PINNED}")
        sys.exit(MISSING)
    return botocore, quota


def make_client(mode, base_url, timeout_s):
    """An STS client in botocore's retry `mode` ("standard" or "adaptive") against `base_url`,
    with dummy credentials and `timeout_s` to connect and to read. Call `load()` first: it
    imports botocore and clears this machine's AWS configuration."""
    import botocore.config
    import botocore.session

    config = botocore.config.Config(
        retries={"mode": mode}, read_timeout=timeout_s, connect_timeout=timeout_s
    )
    return botocore.session.get_session().create_client(
        "sts",
        region_name="us-east-1",
        endpoint_url=base_url,
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="dummy",
        config=config,
    )


def outcome(botocore, error):
    if error is None:
        return "ok"
    if isinstance(error, botocore.exceptions.ClientError):
        return f"code {error.response['Error']['Code']}"
    if isinstance(error, botocore.exceptions.ReadTimeoutError):
        return "timeout"
    if isinstance(error, (botocore.exceptions.ConnectionError, botocore.exceptions.HTTPClientError)):
        return "connection"
    return f"unexpected {type(error).__name__}: {error}"


def run_case(botocore, quota, case, timeout_s):
    then = wire(case["then"]) if "then" in case else None
    schedule = Schedule([wire(e) for e in case["schedule"]], OK_BODY, then, "text/xml")
    server, base_url = serve(schedule)
    # Every quota the client makes is kept, to read its capacity after each call.
    quotas = []
    init = quota.RetryQuota.__init__

    def keep(self, *args, **kwargs):
        init(self, *args, **kwargs)
        quotas.append(self)

    quota.RetryQuota.__init__ = keep
    recorder = RecordingTime()
    recorder.wait = case.get("wait", True)
    botocore.endpoint.time = recorder
    calls = []
    try:
        client = make_client("standard", base_url, timeout_s)
        assert len(quotas) == 1, f"one retry quota per client, found {len(quotas)}"
        for _ in range(case.get("calls", 1)):
            first, slept = len(schedule.requests), len(recorder.sleeps)
            error = None
            try:
                client.get_caller_identity()
            except Exception as e:  # the outcome is recorded, whatever it is
                error = e
            requests = schedule.requests[first:]
            metadata = (getattr(error, "response", None) or {}).get("ResponseMetadata", {})
            calls.append({
                "attempts": len(requests),
                "sdk_requests": [r["sdk_request"] for r in requests],
                "sleeps_s": recorder.sleeps[slept:],
                "pauses_s": [b["arrived_s"] - a.get("answered_s", b["arrived_s"]) for a, b in zip(requests, requests[1:])],
                "outcome": outcome(botocore, error),
                "quota_reached": bool(metadata.get("RetryQuotaReached")),
                "quota_after": quotas[0].available_capacity,
            })
    finally:
        quota.RetryQuota.__init__ = init
        botocore.endpoint.time = time
        server.shutdown()
        server.server_close()
    return {"name": case["name"], "calls": calls}


def main():
    botocore, quota = load()
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "botocore_cases.json")) as f:
        spec = json.load(f)
    cases = [run_case(botocore, quota, case, spec["timeout_s"]) for case in spec["cases"]]
    print(json.dumps({"sdk": "botocore", "version": botocore.__version__, "cases": cases}))


if __name__ == "__main__":
    main()
