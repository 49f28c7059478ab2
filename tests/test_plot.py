"""`fgl-jax plot`: curves of several runs from their metrics.jsonl on one PNG."""
import json
import struct

import numpy as np

from fgl_jax.cli import main


def _run_dir(path, rows):
    path.mkdir()
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _png_size(path):
    """(width, height) from the PNG header: 8-byte signature, then the IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def _rows(n, with_bytes=False):
    rows = []
    for r in range(1, n + 1):
        row = {"round": r, "train_loss": 1.0 / r, "val_acc": 0.5 + r / (4 * n), "test_acc": 0.5 + r / (5 * n),
               "eval": {"nested": 1.0}}  # nested rows (the evaluation hook's) are not curves
        if with_bytes:
            row["bytes_up"] = 1000 * r
        rows.append(row)
    return rows


def test_two_runs_on_one_png_with_a_panel_per_kind(tmp_path, capsys):
    a = _run_dir(tmp_path / "a", _rows(5))
    b = _run_dir(tmp_path / "b", _rows(8))
    out = tmp_path / "ab.png"
    assert main(["plot", str(a), str(b), "--out", str(out), "--dpi", "50"]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    w2, h2 = _png_size(out)
    # a run that logs bytes gets a third panel: the figure is 4.2 inches wider per panel
    c = _run_dir(tmp_path / "c", _rows(5, with_bytes=True))
    out3 = tmp_path / "abc.png"
    assert main(["plot", str(a), str(c), "--out", str(out3), "--dpi", "50"]) == 0
    w3, h3 = _png_size(out3)
    assert (w2, h2) == (round(2 * 4.2 * 50), round(3.4 * 50))
    assert (w3, h3) == (round(3 * 4.2 * 50), round(3.4 * 50))
    # a DP run's epsilon gets a fourth panel
    d = _run_dir(tmp_path / "d", [{**row, "dp_epsilon": 0.1 * row["round"]} for row in _rows(5, with_bytes=True)])
    out4 = tmp_path / "d.png"
    assert main(["plot", str(d), "--out", str(out4), "--dpi", "50"]) == 0
    assert _png_size(out4) == (round(4 * 4.2 * 50), round(3.4 * 50))


def test_missing_metrics_is_one_clear_line(tmp_path, capsys):
    a = _run_dir(tmp_path / "a", _rows(3))
    empty = tmp_path / "not_a_run"
    empty.mkdir()
    assert main(["plot", str(a), str(empty), "--out", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not_a_run" in err and "metrics.jsonl" in err, err
    assert not (tmp_path / "x.png").exists()
    assert main(["plot", str(a), "--metrics", "nope", "--out", str(tmp_path / "y.png")]) == 2
    assert "'nope'" in capsys.readouterr().err


def test_personalised_run_gets_the_per_client_spread_panel(tmp_path):
    """A run logging the per-client spread (test_acc_clients_mean/_worst10/_sd) gets one more panel, and
    its band is mean -/+ sd with the worst 10 % beside it, read from the rows as written."""
    from fgl_jax.plot import _series, client_spread_band
    spread = [(0.6, 0.3, 0.1), (0.7, 0.45, 0.05), (0.72, 0.5, 0.04)]
    rows = [{**row, "test_acc_clients_mean": m, "test_acc_clients_worst10": w, "test_acc_clients_sd": s}
            for row, (m, w, s) in zip(_rows(3), spread)]
    p = _run_dir(tmp_path / "ditto", rows)
    band = client_spread_band(_series(rows))
    assert band["round"] == [1, 2, 3]
    np.testing.assert_allclose(band["low"], [0.5, 0.65, 0.68])
    np.testing.assert_allclose(band["high"], [0.7, 0.75, 0.76])
    assert band["worst10"] == [0.3, 0.45, 0.5]
    assert client_spread_band(_series(_rows(3))) is None   # a FedAvg run: no spread, no panel
    out = tmp_path / "spread.png"
    assert main(["plot", str(p), "--out", str(out), "--dpi", "50"]) == 0
    assert _png_size(out) == (round(3 * 4.2 * 50), round(3.4 * 50))   # loss, accuracy, per-client
