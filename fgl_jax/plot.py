"""Curves of finished (or running) runs, read from their `metrics.jsonl`, on one figure.

    fgl-jax plot runs/cora_fedavg runs/cora_fedprox --out fedavg_vs_fedprox.png

    import fgl_jax as fj
    fj.plot_runs(["runs/a", "runs/b"], out="ab.png")

One panel per kind of metric a run logged, each run one line (same colour in every panel):
losses (`*loss`), accuracies (`*_acc`) and, when rows carry fields whose name contains "bytes",
the cumulative communication in MB (round totals such as `comm_up_bytes`; per-client columns only when a
run logs no totals), for a DP run the accountant's epsilon after each round (`dp_epsilon`) and, for a
personalised method, the per-client test accuracy's distribution (`client_spread_band`: the mean over
clients with a band of one standard deviation, and the mean of the worst 10 % dashed).
matplotlib is imported only here, when a figure is drawn.
"""
from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Optional, Sequence

from fgl_jax import rundir

# panel title -> which metric names belong to it
PANELS = (
    ("loss", lambda k: k.endswith("loss")),
    ("accuracy", lambda k: k.endswith("_acc")),
    ("communication, cumulative MB", lambda k: "bytes" in k),
    ("privacy, epsilon spent", lambda k: k == "dp_epsilon"),
    ("per-client test accuracy", lambda k: k.startswith(SPREAD_PREFIX)),
)
# the per-client spread's row fields (`fgl_jax.federated.evaluation.SPREAD_KEYS`; named here so that
# drawing a figure does not import jax)
SPREAD_PREFIX = "test_acc_clients_"
SPREAD_FIELDS = ("test_acc_clients_mean", "test_acc_clients_worst10", "test_acc_clients_sd")


def read_run(run: os.PathLike) -> list[dict]:
    """The per-round rows of a run directory (or of a metrics.jsonl path); a clear ValueError when absent."""
    path = Path(run)
    if path.is_dir():
        path = path / "metrics.jsonl"
    if not path.is_file():
        raise ValueError(f"{run}: no metrics.jsonl (expected a run directory written with --out)")
    rows = rundir.read_rows(path)
    if not rows:
        raise ValueError(f"{path}: holds no rows")
    return rows


def _series(rows: list[dict]) -> dict[str, tuple[list[int], list[float]]]:
    """metric name -> (rounds, values), numeric scalar fields only (the nested "eval" rows are skipped)."""
    out: dict[str, tuple[list[int], list[float]]] = {}
    for row in rows:
        for k, v in row.items():
            if k == "round" or isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            xs, ys = out.setdefault(k, ([], []))
            xs.append(int(row["round"]))
            ys.append(float(v))
    return out


def client_spread_band(series: dict) -> Optional[dict]:
    """The per-client accuracy band of one run's `_series` output, or None when it logs no spread.

    Args:
      series: metric name -> (rounds, values), as `_series` returns.
    Returns:
      {"round": [R], "mean": [R], "low": [R] (mean - sd), "high": [R] (mean + sd), "worst10": [R]} over
      the rounds that log all three spread fields.
    """
    if not all(k in series for k in SPREAD_FIELDS):
        return None
    by = [dict(zip(*series[k])) for k in SPREAD_FIELDS]
    rounds = sorted(set(by[0]) & set(by[1]) & set(by[2]))
    mean, worst, sd = ([b[r] for r in rounds] for b in by)
    return {"round": rounds, "mean": mean, "low": [m - s for m, s in zip(mean, sd)],
            "high": [m + s for m, s in zip(mean, sd)], "worst10": worst}


def plot_runs(runs: Sequence[os.PathLike], out: os.PathLike = "runs.png", *,
              metrics: Optional[Sequence[str]] = None, labels: Optional[Sequence[str]] = None,
              title: Optional[str] = None, dpi: int = 100) -> Path:
    """Draw the curves of `runs` (run directories or metrics.jsonl files) into the PNG `out`.

    Args:
      runs: one or more run directories written with `--out` (or their metrics.jsonl files).
      out: the image to write (its suffix picks the format: .png, .svg, .pdf).
      metrics: only these metric names (default: every loss, accuracy and bytes field found).
      labels: one legend label per run (default: the directory names).
      title: the figure title.
      dpi: resolution of a raster image.
    Returns:
      The path written.
    """
    if not runs:
        raise ValueError("plot: give at least one run directory")
    labels = list(labels) if labels else [Path(r).name if Path(r).is_dir() else Path(r).parent.name for r in runs]
    if len(labels) != len(runs):
        raise ValueError(f"plot: {len(labels)} labels for {len(runs)} runs")
    series = [_series(read_run(r)) for r in runs]
    names = sorted({k for s in series for k in s})
    if metrics:
        missing = [m for m in metrics if m not in names]
        if missing:
            raise ValueError(f"plot: metric {missing[0]!r} is in none of the runs (they log: {', '.join(names)})")
        names = list(metrics)
    panels = []
    for panel, belongs in PANELS:
        keys = [k for k in names if belongs(k)]
        if panel.startswith("communication") and not metrics:
            keys = [k for k in keys if not k.endswith("_per_client")] or keys
        if keys:
            panels.append((panel, keys))
    if metrics:  # an explicitly requested metric that fits no panel gets its own
        placed = {k for _, ks in panels for k in ks}
        panels += [(k, [k]) for k in names if k not in placed]
    if not panels:
        raise ValueError(f"plot: no loss, accuracy, bytes or epsilon fields in the runs (they log: {', '.join(names)})")

    # a bare Figure (no pyplot): no backend, no display, nothing left open in a notebook session
    import matplotlib
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.2 * len(panels), 3.4))
    axes = fig.subplots(1, len(panels), squeeze=False)
    colors = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = ("-", "--", ":", "-.")
    for ax, (panel, keys) in zip(axes[0], panels):
        for i, (s, label) in enumerate(zip(series, labels)):
            band = client_spread_band(s) if panel.startswith("per-client") else None
            if band is not None:   # mean over clients, +- one sd shaded, the worst 10 % dashed
                c = colors[i % len(colors)]
                ax.plot(band["round"], band["mean"], color=c, lw=1.3, label=f"{label}: mean ± sd")
                ax.fill_between(band["round"], band["low"], band["high"], color=c, alpha=0.15, lw=0)
                ax.plot(band["round"], band["worst10"], color=c, ls="--", lw=1.1, label=f"{label}: worst 10 %")
                continue
            for j, k in enumerate(keys):
                if k not in s:
                    continue
                xs, ys = s[k]
                if panel.startswith("communication"):
                    ys = [v / 1e6 for v in itertools.accumulate(ys)]  # cumulative, MB
                name = label if len(keys) == 1 else f"{label}: {k}"
                ax.plot(xs, ys, color=colors[i % len(colors)], ls=styles[j % len(styles)], lw=1.3, label=name)
        ax.set(title=panel, xlabel="round")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi)
    return out
