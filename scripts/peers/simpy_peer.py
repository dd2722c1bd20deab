"""The models of models.py in SimPy, written as a SimPy user would: one process per customer,
`Resource` for the servers, `env.timeout` for service, and `request | timeout` where faultline
arms a timeout (it never fires at these settings, but it is work both sides do)."""

import random

import simpy


class Tally:
    """Per-replication sums over the customers that arrived in [warmup, duration)."""

    def __init__(self, warmup_s, duration_s):
        self.warmup_s = warmup_s
        self.duration_s = duration_s
        self.count = 0
        self.sums = {}

    def measured(self, arrival_s):
        return self.warmup_s <= arrival_s < self.duration_s

    def add(self, name, value):
        self.sums[name] = self.sums.get(name, 0.0) + value


def source(env, lam, duration_s, rng, customer):
    while True:
        yield env.timeout(rng.expovariate(lam))
        if env.now >= duration_s:
            return
        env.process(customer(env.now))


def run_mmc(p, env, rng, tally):
    station = simpy.Resource(env, capacity=p["c"])
    mu = 1.0 / p["mean_service_s"]
    timeout_s = p["timeout_s"]

    def customer(arrival):
        with station.request() as req:
            if timeout_s:
                # The caller's timeout covers the wait and the service.
                deadline = env.timeout(timeout_s)
                fired = yield req | deadline
                if req not in fired:
                    return
            else:
                yield req
            start = env.now
            yield env.timeout(rng.expovariate(mu))
        if tally.measured(arrival):
            tally.count += 1
            tally.add("wait_ms", 1e3 * (start - arrival))
            tally.add("sojourn_ms", 1e3 * (env.now - arrival))

    return customer


def run_tandem(p, env, rng, tally):
    first = simpy.Resource(env, capacity=1)
    second = simpy.Resource(env, capacity=1)
    mu1, mu2 = 1.0 / p["mean1_s"], 1.0 / p["mean2_s"]

    def customer(arrival):
        with first.request() as req:
            yield req
            start1 = env.now
            yield env.timeout(rng.expovariate(mu1))
        arrival2 = env.now
        with second.request() as req:
            yield req
            start2 = env.now
            yield env.timeout(rng.expovariate(mu2))
        if tally.measured(arrival):
            tally.count += 1
            tally.add("wait1_ms", 1e3 * (start1 - arrival))
            tally.add("wait2_ms", 1e3 * (start2 - arrival2))
            tally.add("sojourn_ms", 1e3 * (env.now - arrival))

    return customer


def run_nested(p, env, rng, tally):
    # Servers enough that nobody waits, as in faultline's scenario.
    middle = simpy.Resource(env, capacity=100_000)
    bottom = simpy.Resource(env, capacity=100_000)
    mu_m, mu_b = 1.0 / p["mean_middle_s"], 1.0 / p["mean_bottom_s"]
    fail_p, attempts, timeout_s = p["p"], p["attempts"], p["timeout_s"]

    def bottom_attempt():
        with bottom.request() as req:
            yield req
            yield env.timeout(rng.expovariate(mu_b))
        return rng.random() >= fail_p

    def middle_attempt(counter):
        with middle.request() as req:
            yield req
            yield env.timeout(rng.expovariate(mu_m))
            for _ in range(attempts):
                counter[0] += 1
                call = env.process(bottom_attempt())
                done = yield call | env.timeout(timeout_s)
                if call in done and done[call]:
                    return True
        return False

    def customer(arrival):
        counter = [0]
        ok = False
        for _ in range(attempts):
            counter[0] += 1
            ok = yield env.process(middle_attempt(counter))
            if ok:
                break
        if tally.measured(arrival):
            tally.count += 1
            tally.add("attempts", counter[0])
            tally.add("failed", 0 if ok else 1)
            tally.add("sojourn_ms", 1e3 * (env.now - arrival))

    return customer


BUILDERS = {"mmc": run_mmc, "tandem": run_tandem, "nested": run_nested}


def replicate(model, duration_s, warmup_s, seed):
    """One replication: the per-customer means and the number of customers simulated."""
    p = model.params
    rng = random.Random(seed)
    env = simpy.Environment()
    tally = Tally(warmup_s, duration_s)
    customer = BUILDERS[p["kind"]](p, env, rng, tally)
    env.process(source(env, p["lam"], duration_s, rng, customer))
    env.run()
    return summarise(p, tally, duration_s, warmup_s)


def summarise(p, tally, duration_s, warmup_s):
    n = max(tally.count, 1)
    out = {"throughput_per_s": tally.count / (duration_s - warmup_s)}
    if p["kind"] == "nested":
        out["amplification"] = tally.sums.get("attempts", 0.0) / n
        out["failed_ratio"] = tally.sums.get("failed", 0.0) / n
        out["sojourn_ms"] = tally.sums.get("sojourn_ms", 0.0) / n
    else:
        for name, total in tally.sums.items():
            out[name] = total / n
    return out
