"""The models of models.py in Ciw, written as a Ciw user would: a network of nodes with
exponential distributions; arrivals stop at `duration_s` (an inter-arrival distribution that
returns no further arrival after it), and the run goes on until everyone has left.

- M/M/c with timeouts armed: reneging after the timeout (Ciw's only timeout; it never fires at
  these settings).
- Nested retries: Ciw has no calls inside a service, so each customer's route through the agent
  (node 1) and the bottom service (node 2) is drawn when it arrives (process-based routing):
  agent attempt, then bottom attempts until one succeeds or the agent's attempts run out, and
  so on. With infinite servers the visits follow each other exactly as in faultline, where the
  agent holds its server while it calls."""

import math
import random

import ciw


class UntilThenStop(ciw.dists.Distribution):
    """Exponential inter-arrival times until `stop_s`, then none."""

    def __init__(self, rate, stop_s):
        super().__init__()
        self.rate = rate
        self.stop_s = stop_s

    def sample(self, t=None, ind=None):
        gap = random.expovariate(self.rate)
        return gap if t + gap < self.stop_s else math.inf


def network(p, duration_s, outcomes):
    arrivals = UntilThenStop(p["lam"], duration_s)
    if p["kind"] == "mmc":
        reneging = [ciw.dists.Deterministic(p["timeout_s"])] if p["timeout_s"] else None
        return ciw.create_network(
            arrival_distributions=[arrivals],
            service_distributions=[ciw.dists.Exponential(rate=1.0 / p["mean_service_s"])],
            number_of_servers=[p["c"]],
            reneging_time_distributions=reneging,
        )
    if p["kind"] == "tandem":
        return ciw.create_network(
            arrival_distributions=[arrivals, None],
            service_distributions=[
                ciw.dists.Exponential(rate=1.0 / p["mean1_s"]),
                ciw.dists.Exponential(rate=1.0 / p["mean2_s"]),
            ],
            number_of_servers=[1, 1],
            routing=[[0.0, 1.0], [0.0, 0.0]],
        )
    if p["kind"] == "nested":
        fail_p, attempts = p["p"], p["attempts"]

        def route(ind, simulation):
            # The nodes after the first agent attempt (the arrival node).
            visits = []
            for attempt in range(attempts):
                if attempt > 0:
                    visits.append(1)
                for _ in range(attempts):
                    visits.append(2)
                    if random.random() >= fail_p:
                        outcomes[ind.id_number] = False
                        return visits
            outcomes[ind.id_number] = True
            return visits

        return ciw.create_network(
            arrival_distributions=[arrivals, None],
            service_distributions=[
                ciw.dists.Exponential(rate=1.0 / p["mean_middle_s"]),
                ciw.dists.Exponential(rate=1.0 / p["mean_bottom_s"]),
            ],
            number_of_servers=[math.inf, math.inf],
            routing=ciw.routing.ProcessBased(route),
        )
    raise ValueError(p["kind"])


def replicate(model, duration_s, warmup_s, seed):
    p = model.params
    ciw.seed(seed)
    failed = {}
    sim = ciw.Simulation(network(p, duration_s, failed))
    # Arrivals stop at duration_s; a minute more lets everyone leave (checked).
    sim.simulate_until_max_time(duration_s + 60.0)
    arrived = sim.nodes[0].number_of_individuals
    left = len(sim.nodes[-1].all_individuals)
    if left != arrived:
        raise RuntimeError(f"ciw {model.name}: {arrived - left} customers still in the system")
    by_customer = {}
    for r in sim.get_all_records():
        by_customer.setdefault(r.id_number, []).append(r)
    count = 0
    sums = {}

    def add(name, value):
        sums[name] = sums.get(name, 0.0) + value

    for visits in by_customer.values():
        visits.sort(key=lambda r: r.arrival_date)
        arrival = visits[0].arrival_date
        if not warmup_s <= arrival < duration_s:
            continue
        count += 1
        add("sojourn_ms", 1e3 * (visits[-1].exit_date - arrival))
        if p["kind"] == "mmc":
            add("wait_ms", 1e3 * visits[0].waiting_time)
        elif p["kind"] == "tandem":
            add("wait1_ms", 1e3 * visits[0].waiting_time)
            add("wait2_ms", 1e3 * visits[1].waiting_time)
        else:
            add("attempts", len(visits))
            add("failed", 1 if failed[visits[0].id_number] else 0)
    n = max(count, 1)
    out = {"throughput_per_s": count / (duration_s - warmup_s)}
    if p["kind"] == "nested":
        out["amplification"] = sums.get("attempts", 0.0) / n
        out["failed_ratio"] = sums.get("failed", 0.0) / n
        out["sojourn_ms"] = sums.get("sojourn_ms", 0.0) / n
    else:
        for name, total in sums.items():
            out[name] = total / n
    return out
