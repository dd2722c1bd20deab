"""Runs faultline, SimPy and Ciw on the models of models.py, checks that the peers' figures agree
with faultline's, and prints the throughput ratios of this one run.

Agreement: for every model, peer and figure, the 95 % confidence interval of the difference of the
two means (Welch, from independent replications on each side) contains 0, with the level
corrected for the number of checks (Bonferroni), so that a run of many checks is not a
1-in-20 coin toss. The closed forms are printed beside them. Exit 1 on any disagreement.

Throughput: measured customers (arrived in [warmup, duration)) per second of wall time on one
thread. faultline's time is its whole process (`faultline run --jobs 1`: start, all
replications, writing its outputs); a peer's is its replications' loop inside Python, without
the interpreter's start or imports.
"""

import argparse
import csv
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time

import ciw
import simpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ciw_peer  # noqa: E402
import models  # noqa: E402
import simpy_peer  # noqa: E402

PEERS = {"simpy": simpy_peer, "ciw": ciw_peer}


def run_faultline(binary, model, replications, seed, workdir, scale, sets):
    duration_s = model.faultline_duration_s * scale
    warmup_s = models.warmup_s(duration_s)
    path = os.path.join(workdir, f"{model.name}.toml")
    with open(path, "w") as f:
        f.write(models.faultline_scenario(model, duration_s, replications, seed))
    out = os.path.join(workdir, f"{model.name}-out")
    start = time.perf_counter()
    subprocess.run(
        [binary, "run", path, "--jobs", "1", "--out", out] + [a for s in sets for a in ("--set", s)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    seconds = time.perf_counter() - start
    (policy,) = [d for d in os.listdir(out) if os.path.isdir(os.path.join(out, d))]
    reps = []
    with open(os.path.join(out, policy, "replications.csv")) as f:
        for row in csv.DictReader(f):
            runs = float(row["logical_run_total"])
            figures = {}
            for name, (metric, _) in model.metrics.items():
                if metric == "throughput_per_s":
                    figures[name] = runs / (duration_s - warmup_s)
                elif metric == "failed_ratio":
                    figures[name] = float(row["outcome_total.failed"]) / runs
                else:
                    figures[name] = float(row[metric])
            figures["customers"] = runs
            reps.append(figures)
    return reps, seconds


def run_peer(peer, model, replications, seed, scale):
    duration_s = model.peer_duration_s * scale
    warmup_s = models.warmup_s(duration_s)
    reps = []
    start = time.perf_counter()
    for r in range(replications):
        figures = peer.replicate(model, duration_s, warmup_s, seed + r)
        figures["customers"] = figures["throughput_per_s"] * (duration_s - warmup_s)
        reps.append(figures)
    return reps, time.perf_counter() - start


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--faultline", required=True, help="the faultline binary (a release build)")
    parser.add_argument("--replications", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every simulated duration")
    parser.add_argument("--models", default=",".join(m.name for m in models.MODELS))
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument(
        "--faultline-set",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="change faultline's side only (`run --set`), to see the check fail: "
        "--models nested --faultline-set dependency.bottom.errors.transient_transport=0.55",
    )
    args = parser.parse_args()

    chosen = [m for m in models.MODELS if m.name in args.models.split(",")]
    version = subprocess.run([args.faultline, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"# peers: {version}; SimPy {simpy.__version__}; Ciw {ciw.__version__}; Python {platform.python_version()}")
    print(f"# {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; {machine()}")
    print(f"# {args.replications} replications a side; seed {args.seed}; scale {args.scale}")

    results = []
    with tempfile.TemporaryDirectory(prefix="faultline-peers-") as workdir:
        for model in chosen:
            fl_reps, fl_s = run_faultline(
                args.faultline, model, args.replications, args.seed, workdir, args.scale, args.faultline_set
            )
            entry = {"model": model, "faultline": (fl_reps, fl_s), "peers": {}}
            for name, peer in PEERS.items():
                entry["peers"][name] = run_peer(peer, model, args.replications, args.seed, args.scale)
            results.append(entry)
            print(f"# ran {model.name}: faultline {fl_s:.2f} s, "
                  + ", ".join(f"{n} {s:.2f} s" for n, (_, s) in entry["peers"].items()), flush=True)

    checks = sum(len(e["model"].metrics) * len(e["peers"]) for e in results)
    level = 1 - 0.05 / (2 * checks)
    failures = 0
    rows = []
    print()
    print(f"Agreement: 95 % family-wise over {checks} checks (each difference's interval at {100 * (1 - 0.05 / checks):.2f} %)")
    print()
    print("| model | figure | closed form | faultline | peer | peer's figure | difference (interval) | agree |")
    print("|---|---|---|---|---|---|---|---|")
    for e in results:
        model = e["model"]
        fl_reps, _ = e["faultline"]
        for name, (_, closed) in model.metrics.items():
            fm, fse, fn = models.estimate([r[name] for r in fl_reps])
            for peer, (p_reps, _) in e["peers"].items():
                pm, pse, pn = models.estimate([r[name] for r in p_reps])
                se = math.sqrt(fse**2 + pse**2)
                if se == 0:
                    ok = fm == pm
                    half = 0.0
                else:
                    # Welch-Satterthwaite degrees of freedom.
                    df = se**4 / ((fse**4 / (fn - 1) if fse else 0) + (pse**4 / (pn - 1) if pse else 0))
                    half = models.t_quantile(df, level) * se
                    ok = abs(fm - pm) <= half
                failures += 0 if ok else 1
                t95 = models.t_quantile(fn - 1, 0.975)
                p95 = models.t_quantile(pn - 1, 0.975)
                print(
                    f"| {model.name} | {name} | {closed:.4g} | {fm:.4g} ± {t95 * fse:.2g} | {peer} | "
                    f"{pm:.4g} ± {p95 * pse:.2g} | {fm - pm:+.3g} (± {half:.2g}) | {'yes' if ok else 'NO'} |"
                )
                rows.append(dict(model=model.name, figure=name, closed_form=closed, faultline=fm, peer=peer, peer_value=pm, agree=ok))

    print()
    print("Throughput, measured customers per second of wall time, one thread (this run):")
    print()
    print("| model | faultline | SimPy | faultline / SimPy | Ciw | faultline / Ciw |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for e in results:
        fl_reps, fl_s = e["faultline"]
        fl_rate = sum(r["customers"] for r in fl_reps) / fl_s
        cells = [e["model"].title, f"{fl_rate / 1e6:.2f} M"]
        ratio = {"model": e["model"].name, "faultline_per_s": fl_rate}
        for peer in ("simpy", "ciw"):
            p_reps, p_s = e["peers"][peer]
            rate = sum(r["customers"] for r in p_reps) / p_s
            cells += [f"{rate / 1e3:.1f} k", f"{fl_rate / rate:.0f}x"]
            ratio[f"{peer}_per_s"] = rate
        ratios.append(ratio)
        print("| " + " | ".join(cells) + " |")

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"agreement": rows, "throughput": ratios, "machine": machine(), "faultline": version}, f, indent=1)
    if failures:
        print(f"\n{failures} figure(s) disagree", file=sys.stderr)
        return 1
    print(f"\nall {checks} figures agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
