"""Error of day-ahead persistence (the `mpc` baseline's forecast, envs/geodc/mpc.hpp) on the
2023 hourly traces in ../shared/data: each hour forecast by the same hour of the day before.

  /usr/bin/python3 bench/forecast_error.py [DATA_DIR]     (default ../shared/data)

Prints, per zone, the mean absolute error and that error relative to the mean magnitude, for the
carbon intensity (LCA column) and the price (in the file's currency).
"""
import csv
import glob
import os
import sys


def column(path, want):
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    header = [h.lower() for h in rows[0]]
    col = next(i for i, h in enumerate(header) if all(w in h for w in want))
    return [float(r[col]) for r in rows[1:] if len(r) > col and r[col] not in ("", "nan")]


def persistence_error(x):
    errs = [abs(x[h] - x[h - 24]) for h in range(24, len(x))]
    mae = sum(errs) / len(errs)
    scale = sum(abs(v) for v in x[24:]) / len(errs)
    return mae, mae / scale


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
    if not os.path.isdir(root):
        print(f"skip: {root} not present")
        return
    print(f"{'zone':<12} {'carbon MAE':>11} {'rel':>6} {'price MAE':>10} {'rel':>6}")
    for carbon in sorted(glob.glob(os.path.join(root, "carbon_intensity", "*_2023_hourly.csv"))):
        zone = os.path.basename(carbon).split("_")[0]
        prices = glob.glob(os.path.join(root, "electricity_prices", zone + "_*.csv"))
        c_mae, c_rel = persistence_error(column(carbon, ["carbon intensity", "lca"]))
        p_mae, p_rel = persistence_error(column(prices[0], ["price"])) if prices else (float("nan"),) * 2
        print(f"{zone:<12} {c_mae:>11.1f} {c_rel:>6.1%} {p_mae:>10.1f} {p_rel:>6.1%}")


if __name__ == "__main__":
    main()
