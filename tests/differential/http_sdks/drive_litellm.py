"""Drives a real LiteLLM Router (litellm 1.110.2) through every case of litellm_cases.json and
prints, as one JSON line, what it did: per call, the attempts each deployment's loopback server
saw, the sleep the router asked for before each retry, the pause the first server saw between
attempts, and the call's outcome.

    python3 drive_litellm.py

Each deployment is an openai-compatible `/chat/completions` at its own server.py on 127.0.0.1
(`openai/m` with that `api_base`). The router's sleeps go through its host
(`litellm/router_python_host.py` `PythonHost.sleep_sync`), which is wrapped to record each
sleep's argument exactly. Its backoff cannot be scaled down: the retry loop is the compiled core
(`rust_bridge/_native.abi3.so`), which does not read the `INITIAL_RETRY_DELAY`, `MAX_RETRY_DELAY`
and `JITTER` variables `litellm/constants.py` reads (measured: with them set, the sleeps are
unchanged). So a sleep is waited in full only in a case that asks (`wait`, default true) and
when it is at most LONG_S; the cooldown cases wait none, so only their `gap_s` passes real time.
The driver also reports the defaults written in constants.py. Exit 3 (and the reason on stdout)
when litellm does not import or is not the pinned version.
"""

import json
import os
import re
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server import Schedule, serve  # noqa: E402

MISSING = 3
LONG_S = 2.0
PINNED = "1.110.2"
OK = {
    "id": "c", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}


def load():
    try:
        import importlib.metadata

        version = importlib.metadata.version("litellm")
        import litellm
        import litellm.router_python_host as host
    except Exception as e:  # ImportError, or the package's own import failing
        print(f"{type(e).__name__}: {e}")
        sys.exit(MISSING)
    if version != PINNED:
        print(f"litellm {version} is installed; the harness pins {PINNED}")
        sys.exit(MISSING)
    return litellm, host, version


def source_defaults(litellm):
    """The defaults as constants.py writes them (`get_env_float("NAME", default)`)."""
    with open(os.path.join(os.path.dirname(litellm.__file__), "constants.py")) as f:
        text = f.read()
    found = {}
    for name in ("INITIAL_RETRY_DELAY", "MAX_RETRY_DELAY", "JITTER", "DEFAULT_MAX_RETRIES", "DEFAULT_COOLDOWN_TIME_SECONDS"):
        m = re.search(rf'^{name}: Final = get_env_(?:float|int)\("{name}", ([0-9.]+)\)', text, re.M)
        found[name] = float(m.group(1)) if m else None
    return found


def outcome(litellm, error):
    if error is None:
        return "ok"
    if isinstance(error, litellm.Timeout):
        return "timeout"
    if isinstance(error, litellm.APIConnectionError):
        return "connection"
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return f"status {status}"
    return f"unexpected {type(error).__name__}: {error}"


def run_case(litellm, case, sleeps, waiting):
    schedules, servers, model_list = [], [], []
    for d in case.get("deployments", [{"group": "g", "schedule": case.get("schedule", [])}]):
        schedule = Schedule(d["schedule"], OK, then=d.get("then"))
        server, url = serve(schedule)
        schedules.append(schedule)
        servers.append(server)
        params = {"model": "openai/m", "api_base": url, "api_key": "dummy"}
        if "order" in d:
            params["order"] = d["order"]
        model_list.append({"model_name": d["group"], "litellm_params": params})
    router = litellm.Router(model_list=model_list, **case.get("router", {}))
    waiting[0] = case.get("wait", True)
    calls = []
    try:
        for spec in case.get("calls", [{}]):
            if spec.get("gap_s"):
                time.sleep(spec["gap_s"])
            before = [len(s.requests) for s in schedules]
            sleeps.clear()
            error = None
            try:
                router.completion(model="g", messages=[{"role": "user", "content": "hi"}])
            except Exception as e:  # the outcome is recorded, whatever it is
                error = e
            requests = schedules[0].requests[before[0]:]
            pauses = [b["arrived_s"] - a["answered_s"] for a, b in zip(requests, requests[1:])]
            calls.append({
                "attempts": [len(s.requests) - n for s, n in zip(schedules, before)],
                "sleeps_s": sleeps[:],
                "pauses_s": pauses,
                "outcome": outcome(litellm, error),
            })
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
    return {"name": case["name"], "calls": calls}


def main():
    litellm, host, version = load()
    sleeps = []
    waiting = [True]

    def sleep_sync(self, seconds):
        sleeps.append(seconds)
        if waiting[0] and seconds <= LONG_S:
            time.sleep(seconds)

    host.PythonHost.sleep_sync = sleep_sync
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "litellm_cases.json")) as f:
        spec = json.load(f)
    cases = [run_case(litellm, case, sleeps, waiting) for case in spec["cases"]]
    print(json.dumps({"version": version, "defaults": source_defaults(litellm), "cases": cases}))


if __name__ == "__main__":
    main()
