"""The models faultline is compared on with SimPy and Ciw, their closed forms, and the
faultline scenario of each.

Times are in seconds on the Python side and in milliseconds in faultline's scenarios. Every model
is an open system: Poisson arrivals from t = 0, arrivals stop at `duration_s`, everything that
arrived drains, and the figures cover the customers that arrived in [warmup_s, duration_s)
(faultline's measured root runs, docs/metrics.md).
"""

from dataclasses import dataclass, field
import math


@dataclass
class Model:
    name: str
    title: str
    # Parameters the peers read (seconds, per second).
    params: dict
    # Metric name -> (faultline metric, closed form or None). The peers report the same names.
    metrics: dict = field(default_factory=dict)
    # Simulated seconds per replication for the peers and for faultline: faultline runs longer so
    # that its wall time is well above its process start (the figures are compared by their
    # confidence intervals, which account for the different lengths).
    peer_duration_s: float = 200.0
    faultline_duration_s: float = 2000.0


def erlang_c(c, a):
    """P(wait) in M/M/c with offered load a = lambda / mu (a < c)."""
    term, total = 1.0, 1.0
    for k in range(1, c):
        term *= a / k
        total += term
    top = term * a / c * c / (c - a)
    return top / (total + top)


def mmc_wq_s(c, lam, mu):
    return erlang_c(c, lam / mu) / (c * mu - lam)


def mmc(name, c, mean_service_s, lam, timeout_s, peer_duration_s, faultline_duration_s):
    mu = 1.0 / mean_service_s
    wq = mmc_wq_s(c, lam, mu)
    rho = lam / (c * mu)
    timeouts = f", timeouts armed ({timeout_s:.0f} s)" if timeout_s else ""
    return Model(
        name=name,
        title=f"M/M/{c}, rho {rho:.1f}{timeouts}",
        params=dict(kind="mmc", c=c, mean_service_s=mean_service_s, lam=lam, timeout_s=timeout_s),
        metrics={
            "wait_ms": ("dependency.station.queue_wait_ms.mean", 1e3 * wq),
            "sojourn_ms": ("dependency.station.sojourn_ms.mean", 1e3 * (wq + mean_service_s)),
            "throughput_per_s": ("throughput_per_s", lam),
        },
        peer_duration_s=peer_duration_s,
        faultline_duration_s=faultline_duration_s,
    )


def tandem(name, lam, mean1_s, mean2_s, peer_duration_s, faultline_duration_s):
    # Jackson: each station is an M/M/1 with the same lambda.
    w1 = 1.0 / (1.0 / mean1_s - lam)
    w2 = 1.0 / (1.0 / mean2_s - lam)
    return Model(
        name=name,
        title=f"tandem M/M/1 -> M/M/1, rho {lam * mean1_s:.1f} and {lam * mean2_s:.1f}",
        params=dict(kind="tandem", lam=lam, mean1_s=mean1_s, mean2_s=mean2_s),
        metrics={
            "wait1_ms": ("dependency.first.queue_wait_ms.mean", 1e3 * (w1 - mean1_s)),
            "wait2_ms": ("dependency.second.queue_wait_ms.mean", 1e3 * (w2 - mean2_s)),
            "sojourn_ms": ("run_latency_ms.mean", 1e3 * (w1 + w2)),
            "throughput_per_s": ("throughput_per_s", lam),
        },
        peer_duration_s=peer_duration_s,
        faultline_duration_s=faultline_duration_s,
    )


def nested(name, lam, p, attempts, mean_middle_s, mean_bottom_s, timeout_s, peer_duration_s, faultline_duration_s):
    """A caller retries an agent (`attempts` attempts, no backoff); each of the agent's attempts
    takes its own service time, then calls the bottom service, retrying it `attempts` times;
    a bottom attempt fails with probability p after its service. Both have so many servers that
    nobody waits. By Wald's identity the figures per customer are products of the means."""
    bottom_per_call = (1 - p**attempts) / (1 - p)
    q = p**attempts  # an agent attempt fails when its bottom call does
    middle_per_run = (1 - q**attempts) / (1 - q)
    amplification = middle_per_run * (1 + bottom_per_call)
    sojourn_s = middle_per_run * (mean_middle_s + bottom_per_call * mean_bottom_s)
    return Model(
        name=name,
        title=f"nested retries {attempts} x {attempts}, p {p}",
        params=dict(
            kind="nested",
            lam=lam,
            p=p,
            attempts=attempts,
            mean_middle_s=mean_middle_s,
            mean_bottom_s=mean_bottom_s,
            timeout_s=timeout_s,
        ),
        metrics={
            "amplification": ("retry_amplification_ratio", amplification),
            "sojourn_ms": ("run_latency_ms.mean", 1e3 * sojourn_s),
            "failed_ratio": ("failed_ratio", q**attempts),
            "throughput_per_s": ("throughput_per_s", lam),
        },
        peer_duration_s=peer_duration_s,
        faultline_duration_s=faultline_duration_s,
    )


MODELS = [
    mmc("mmc4", c=4, mean_service_s=0.1, lam=32.0, timeout_s=60.0, peer_duration_s=400.0, faultline_duration_s=8000.0),
    mmc("mmc10", c=10, mean_service_s=0.1, lam=90.0, timeout_s=None, peer_duration_s=200.0, faultline_duration_s=4000.0),
    tandem("tandem", lam=80.0, mean1_s=0.010, mean2_s=0.0075, peer_duration_s=200.0, faultline_duration_s=4000.0),
    nested(
        "nested",
        lam=100.0,
        p=0.5,
        attempts=3,
        mean_middle_s=0.005,
        mean_bottom_s=0.010,
        timeout_s=60.0,
        peer_duration_s=100.0,
        faultline_duration_s=2000.0,
    ),
]


def warmup_s(duration_s):
    return duration_s / 20.0


def faultline_scenario(model, duration_s, replications, seed):
    """The faultline scenario of `model` as TOML text."""
    p = model.params
    head = f"""# Generated by scripts/peers/models.py: {model.title}.
[simulation]
duration_s = {duration_s}
warmup_s = {warmup_s(duration_s)}
seed = {seed}
replications = {replications}
"""
    if p["kind"] == "mmc":
        timeout_ms = 1e3 * p["timeout_s"] if p["timeout_s"] else 0
        return (
            head
            + f"""
[[dependency]]
name = "station"
servers = {p["c"]}
queue_capacity = 1000000
service_time = {{ dist = "exponential", mean_ms = {1e3 * p["mean_service_s"]} }}

[[workflow]]
name = "customers"
arrivals = {{ rate_per_s = {p["lam"]} }}
deadline_ms = 100000000

  [[workflow.step]]
  id = "serve"
  dependency = "station"

[policy.plain]
deadline_propagation = false
timeout_ms = {timeout_ms}
retry = {{ max_attempts = 1 }}
"""
        )
    if p["kind"] == "tandem":
        return (
            head
            + f"""
[[dependency]]
name = "first"
servers = 1
queue_capacity = 1000000
service_time = {{ dist = "exponential", mean_ms = {1e3 * p["mean1_s"]} }}

[[dependency]]
name = "second"
servers = 1
queue_capacity = 1000000
service_time = {{ dist = "exponential", mean_ms = {1e3 * p["mean2_s"]} }}

[[workflow]]
name = "customers"
arrivals = {{ rate_per_s = {p["lam"]} }}
deadline_ms = 100000000

  [[workflow.step]]
  id = "one"
  dependency = "first"

  [[workflow.step]]
  id = "two"
  after = ["one"]
  dependency = "second"

[policy.plain]
deadline_propagation = false
timeout_ms = 0
retry = {{ max_attempts = 1 }}
"""
        )
    if p["kind"] == "nested":
        return (
            head
            + f"""
[[dependency]]
name = "bottom"
servers = 100000
service_time = {{ dist = "exponential", mean_ms = {1e3 * p["mean_bottom_s"]} }}
errors = {{ transient_transport = {p["p"]} }}

[[dependency]]
name = "middle"
servers = 100000
service_time = {{ dist = "exponential", mean_ms = {1e3 * p["mean_middle_s"]} }}
calls = [{{ dependency = "bottom", max_attempts = {p["attempts"]}, timeout_ms = {1e3 * p["timeout_s"]} }}]

[[workflow]]
name = "customers"
arrivals = {{ rate_per_s = {p["lam"]} }}
deadline_ms = 100000000

  [[workflow.step]]
  id = "ask"
  dependency = "middle"

[policy.retrying]
deadline_propagation = false
timeout_ms = 0
retry = {{ max_attempts = {p["attempts"]}, backoff = {{ kind = "none" }} }}
"""
        )
    raise ValueError(p["kind"])


def quantile(cdf, target):
    lo, hi = 0.0, 200.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if cdf(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def t_quantile(df, prob):
    def pdf(x):
        return math.exp(
            math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
        ) * (1 + x * x / df) ** (-(df + 1) / 2)

    def cdf(x):
        n = 2000
        h = x / n
        s = pdf(0.0) + pdf(x)
        for i in range(1, n):
            s += pdf(i * h) * (2 if i % 2 == 0 else 4)
        return 0.5 + s * h / 3

    return quantile(cdf, prob)


def estimate(values):
    """(mean, standard error, n) of independent replications."""
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n), n
