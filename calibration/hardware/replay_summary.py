#!/usr/bin/env python3
"""Pools `gosim replay --out` results: median |error| and Kendall's tau-b.

Usage: replay_summary.py REPLAY.json [REPLAY.json ...]

Prints, per file and over all decisions of all files, the number of
decisions, the median absolute relative error of the simulated step time
against the measured one, and Kendall's tau-b between simulated and measured
step times (ties counted as in tau-b). Exits 1 with one line on unreadable
input.
"""
import json
import math
import sys


def tau_b(x, y):
    concordant = discordant = ties_x = ties_y = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            a, b = x[i] - x[j], y[i] - y[j]
            if a == 0 and b == 0:
                continue
            if a == 0:
                ties_x += 1
            elif b == 0:
                ties_y += 1
            elif (a > 0) == (b > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return (concordant - discordant) / denominator if denominator > 0 else float("nan")


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def line(name, sim, meas):
    errors = [abs(s - m) / m for s, m in zip(sim, meas)]
    print(f"{name}: {len(sim)} decisions, median |error| {100 * median(errors):.1f}%, "
          f"Kendall tau-b {tau_b(sim, meas):.3f}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    all_sim, all_meas = [], []
    for path in sys.argv[1:]:
        try:
            with open(path) as f:
                decisions = json.load(f)["decisions"]
            sim = [float(d["simulated_s"]) for d in decisions]
            meas = [float(d["measured_s"]) for d in decisions]
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"replay_summary.py: {path}: not a gosim replay result ({e}); "
                  "give files written by gosim replay --out", file=sys.stderr)
            sys.exit(1)
        line(path, sim, meas)
        all_sim += sim
        all_meas += meas
    if len(sys.argv) > 2:
        line("all", all_sim, all_meas)


if __name__ == "__main__":
    main()
