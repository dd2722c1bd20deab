#!/usr/bin/env python3
"""Generate tests/data/otel-python-traces.jsonl, an interoperability fixture.

The traces are written by the OFFICIAL OpenTelemetry Python SDK (not by
faultline), so `faultline calibrate` is tested against what a real
instrumented service emits. The latency distributions are known (see
tests/data/otel-python-traces.truth.json, written alongside), so calibrate
must recover them.

Environment (any python3 >= 3.9):

    python3 -m venv .venv && .venv/bin/pip install opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-common==1.45.2

Regenerate both files, from the repository root:

    .venv/bin/python scripts/otel-python-traces.py

(optional arguments: --runs N, --out PATH; the defaults produce the
checked-in files). The output is deterministic: every random draw, every
trace/span id and every timestamp comes from random.Random(20261204); the
wall clock is never read. (The SDK's default resource would add a random
service.instance.id per process; the script pins it.)

What it models: an agent service "meeting-agent"; each root run
("agent.run meeting-analysis", SERVER) calls, one after the other with no gap,
  1. "chat gpt-4o" (CLIENT): lognormal, median 800 ms, p95 2000 ms; each attempt
     fails with HTTP 429 with probability 0.05 and is retried at once, at most
     3 attempts (a failed attempt's duration is drawn from the same lognormal);
  2. "GET /search" (CLIENT, server.address=vector-db): gamma(shape 2, scale 50 ms);
  3. "tools/call create_ticket" (CLIENT, rpc.service=ticketing):
     Weibull(shape 1.5, scale 300 ms); HTTP 503 with probability 0.02, no retry.
Root runs arrive as a Poisson process of rate 2/s from 2026-01-01T00:00:00Z.

Encoding: spans are encoded by the SDK's own OTLP encoder
(opentelemetry.exporter.otlp.proto.common.trace_encoder.encode_spans) and
turned into JSON with google.protobuf.json_format.MessageToDict. Two
differences between the protobuf JSON mapping and OTLP/JSON are fixed up,
as the OTLP spec (and the Collector's file exporter) requires:
  * traceId / spanId / parentSpanId are lowercase hex, not base64;
  * enums (kind, status.code) are integers, not names.
64-bit integers (timestamps, intValue) stay decimal strings, as in OTLP/JSON.
The output is JSON Lines like the Collector's file exporter: one
{"resourceSpans": [...]} document per line, here one line per root run
(its spans in the order the SDK finished them: children first, root last).
"""

import argparse
import base64
import json
import math
import os
import random
import sys
import uuid

from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import SpanKind, Status, StatusCode

SEED = 20261204
SDK = "opentelemetry-sdk 1.45.2"
START_S = 1767225600  # 2026-01-01T00:00:00Z
ARRIVAL_RATE_PER_S = 2
MS = 1_000_000  # ns per ms

GPT_P50_MS, GPT_P95_MS = 800, 2000
GPT_SIGMA = math.log(GPT_P95_MS / GPT_P50_MS) / 1.6448536
GPT_P429 = 0.05
GPT_MAX_ATTEMPTS = 3
SEARCH_SHAPE, SEARCH_SCALE_MS = 2, 50
TICKET_SHAPE, TICKET_SCALE_MS = 1.5, 300
TICKET_P503 = 0.02


class SeededIdGenerator(IdGenerator):
    """Trace and span ids from the script's seeded Random (the SDK default
    uses the global `random` module, which is seeded from the OS)."""

    def __init__(self, rng):
        self.rng = rng

    def generate_span_id(self):
        span_id = self.rng.getrandbits(64)
        while span_id == trace.INVALID_SPAN_ID:
            span_id = self.rng.getrandbits(64)
        return span_id

    def generate_trace_id(self):
        trace_id = self.rng.getrandbits(128)
        while trace_id == trace.INVALID_TRACE_ID:
            trace_id = self.rng.getrandbits(128)
        return trace_id

    def is_trace_id_random(self):
        return True


def ms_to_ns(ms):
    return int(round(ms * MS))


def b64_to_hex(value):
    return base64.b64decode(value).hex()


ID_KEYS = ("traceId", "spanId", "parentSpanId")


def fix_otlp_json(doc):
    """Protobuf JSON mapping -> OTLP/JSON: hex ids, integer enums."""
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in ID_KEYS:
                    if key in span:
                        span[key] = b64_to_hex(span[key])
                for link in span.get("links", []):
                    for key in ID_KEYS:
                        if key in link:
                            link[key] = b64_to_hex(link[key])
                # Already integers with use_integers_for_enums=True; guard anyway.
                assert isinstance(span.get("kind", 0), int), span.get("kind")
                assert isinstance(span.get("status", {}).get("code", 0), int)
    return doc


def child_ctx(parent):
    return trace.set_span_in_context(parent)


def simulate(runs):
    rng = random.Random(SEED)
    exporter = InMemorySpanExporter()
    # The SDK's default resource adds service.instance.id = uuid4() (a fresh
    # one per process); pin it to a fixed v4-shaped UUID so output is stable.
    instance_rng = random.Random(f"{SEED}/service.instance.id")
    instance_id = str(uuid.UUID(int=instance_rng.getrandbits(128), version=4))
    provider = TracerProvider(
        resource=Resource.create(
            {"service.name": "meeting-agent", "service.instance.id": instance_id}
        ),
        id_generator=SeededIdGenerator(rng),
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("faultline.fixture.meeting-agent", "1.0.0")

    trace_order = []
    t_ns = START_S * 1_000_000_000
    for _ in range(runs):
        t_ns += int(round(rng.expovariate(ARRIVAL_RATE_PER_S) * 1e9))
        root = tracer.start_span(
            "agent.run meeting-analysis", kind=SpanKind.SERVER, start_time=t_ns
        )
        trace_order.append(root.get_span_context().trace_id)
        ctx = child_ctx(root)
        now = t_ns

        # 1. LLM chat call, 429 + immediate retry, at most 3 attempts.
        input_tokens = int(round(rng.lognormvariate(math.log(1500), 0.4)))
        output_tokens = rng.randint(100, 400)
        attrs = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.system": "openai",
            "gen_ai.usage.input_tokens": input_tokens,
            "gen_ai.usage.output_tokens": output_tokens,
        }
        for _attempt in range(GPT_MAX_ATTEMPTS):
            dur = ms_to_ns(rng.lognormvariate(math.log(GPT_P50_MS), GPT_SIGMA))
            failed = rng.random() < GPT_P429
            span = tracer.start_span(
                "chat gpt-4o", context=ctx, kind=SpanKind.CLIENT,
                attributes=attrs, start_time=now,
            )
            if failed:
                span.set_attribute("error.type", "429")
                span.set_attribute("http.response.status_code", 429)
                span.set_status(Status(StatusCode.ERROR))
            now += dur
            span.end(end_time=now)
            if not failed:
                break

        # 2. Vector search.
        dur = ms_to_ns(rng.gammavariate(SEARCH_SHAPE, SEARCH_SCALE_MS))
        span = tracer.start_span(
            "GET /search", context=ctx, kind=SpanKind.CLIENT,
            attributes={"server.address": "vector-db"}, start_time=now,
        )
        now += dur
        span.end(end_time=now)

        # 3. Tool call, 503 without retry.
        dur = ms_to_ns(rng.weibullvariate(TICKET_SCALE_MS, TICKET_SHAPE))
        failed = rng.random() < TICKET_P503
        span = tracer.start_span(
            "tools/call create_ticket", context=ctx, kind=SpanKind.CLIENT,
            attributes={"rpc.service": "ticketing"}, start_time=now,
        )
        if failed:
            span.set_attribute("error.type", "503")
            span.set_attribute("http.response.status_code", 503)
            span.set_status(Status(StatusCode.ERROR))
        now += dur
        span.end(end_time=now)

        root.end(end_time=now)

    provider.force_flush()
    return exporter.get_finished_spans(), trace_order


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(here, "..", "tests", "data", "otel-python-traces.jsonl")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=4000)
    ap.add_argument("--out", default=default_out)
    args = ap.parse_args()

    # Keep the environment from leaking into the Resource.
    for var in ("OTEL_RESOURCE_ATTRIBUTES", "OTEL_SERVICE_NAME",
                "OTEL_EXPERIMENTAL_RESOURCE_DETECTORS"):
        os.environ.pop(var, None)

    spans, trace_order = simulate(args.runs)

    by_trace = {}
    for span in spans:
        by_trace.setdefault(span.get_span_context().trace_id, []).append(span)
    assert len(by_trace) == len(trace_order), "trace id collision"

    out = os.path.normpath(args.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        for trace_id in trace_order:
            msg = encode_spans(by_trace[trace_id])
            doc = fix_otlp_json(MessageToDict(msg, use_integers_for_enums=True))
            f.write(json.dumps(doc, separators=(",", ":")) + "\n")

    truth = {
        "gpt-4o": {
            "span": "chat gpt-4o", "dist": "lognormal",
            "p50_ms": GPT_P50_MS, "p95_ms": GPT_P95_MS, "sigma": GPT_SIGMA,
            "error": {"429": GPT_P429}, "max_attempts": GPT_MAX_ATTEMPTS,
            "retry_backoff_ms": 0,
        },
        "vector-db": {
            "span": "GET /search", "dist": "gamma",
            "shape": SEARCH_SHAPE, "scale_ms": SEARCH_SCALE_MS,
        },
        "ticketing": {
            "span": "tools/call create_ticket", "dist": "weibull",
            "shape": TICKET_SHAPE, "scale_ms": TICKET_SCALE_MS,
            "error": {"503": TICKET_P503},
        },
        "service": "meeting-agent",
        "root_span": "agent.run meeting-analysis",
        "calls": "sequential, no gaps: gpt-4o (with retries), vector-db, ticketing",
        "arrival": "poisson",
        "arrival_rate_per_s": ARRIVAL_RATE_PER_S,
        "start_unix_s": START_S,
        "runs": args.runs,
        "seed": SEED,
        "sdk": SDK,
    }
    truth_path = out[: -len(".jsonl")] + ".truth.json" if out.endswith(".jsonl") else out + ".truth.json"
    with open(truth_path, "w", encoding="utf-8", newline="\n") as f:
        f.write(json.dumps(truth, indent=2) + "\n")

    print(f"wrote {out} ({args.runs} runs, {len(spans)} spans) and {truth_path}", file=sys.stderr)


if __name__ == "__main__":
    main()
