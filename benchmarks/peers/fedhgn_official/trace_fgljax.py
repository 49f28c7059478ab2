"""Round by round: fgl_jax FedHGN started from the authors' code's own initial parameters, beside
the authors' code's per-round trace of the same seed (run_official.py --trace).

    python -m benchmarks.peers.fedhgn_official.trace_fgljax --bin <split .bin> --init <official_init_*.pkl> \\
        --official-trace <trace.json> --split RE|RET --out <trace_cmp.json>

The .pkl comes from experiments/fedhgn/official_init/dump_official_init.py run in the authors'
checkout (pointed at the same split file). fgl_jax runs with round1_align=code_quirk (the authors'
round-1 zero pool) for as many rounds as the authors' run took. Per round both sides give: weighted
validation and test accuracy after the round, each client's alignment term at its first local step
(before the factor lambda; round 1 doubled as in the authors' code) and each client's norm of its
basis coefficients after the round. Prints the first round where they differ beyond float noise.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from experiments.fedhgn.official_init import official_params  # noqa: E402
from fgl_jax import load_official_split, safe_load  # noqa: E402
from fgl_jax.systems.fedhgn import FedHGNConfig, alignment_loss, fedhgn, hetero_fed_data, server_pool  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--init", required=True)
    ap.add_argument("--official-trace", required=True)
    ap.add_argument("--split", choices=("RE", "RET"), required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    graphs = load_official_split(a.bin)
    data = hetero_fed_data(graphs)
    cfg = FedHGNConfig(split=a.split, round1_align="code_quirk")
    alg = fedhgn(cfg)
    C = len(graphs)
    server, beta, emb = official_params(safe_load(a.init)["init"], graphs, alg, data)
    own = alg.init(jax.random.key(0), data)
    st = dataclasses.replace(own, server={**own.server, **server},
                             shared={k: jnp.broadcast_to(v, (C,) + v.shape) for k, v in {**own.server, **server}.items()},
                             coeffs={"beta": beta}, private={"emb": emb})
    theirs = json.loads(Path(a.official_trace).read_text())
    mask = data.blocks.rel_mask
    round_fn = jax.jit(alg.round)
    rows = []
    for r, t in enumerate(theirs):
        pool, pmask = server_pool(st.beta_store, mask, st.seen, jnp.arange(C), jax.random.key(r), cfg.round1_align, False)
        scale = 1.0 if bool(jnp.any(st.seen)) else 2.0
        align = [float(scale * alignment_loss(st.coeffs["beta"][k], mask[k], pool[k], pmask[k])) for k in range(C)]
        st, m = round_fn(st, data, jax.random.key(r))
        norms = [float(jnp.sqrt(jnp.sum(jnp.where(mask[k][:, None], st.coeffs["beta"][k] ** 2, 0.0)))) for k in range(C)]
        rows.append({"round": r + 1, "val": float(m["val_acc"]), "test": float(m["test_acc"]), "align": align,
                     "coeff_norm": norms})
    first_diff = None
    for o, f in zip(theirs, rows):
        # run_official.py logs every local step's term (a list); an older trace only the last step
        oa = [x[0] if isinstance(x, list) else None for x in o["align"]]
        bad = (abs(o["val"] - f["val"]) > 1e-6 or abs(o["test"] - f["test"]) > 1e-6
               or (None not in oa and not np.allclose(oa, f["align"], rtol=1e-3, atol=1e-4))
               or not np.allclose(o["coeff_norm"], f["coeff_norm"], rtol=1e-3, atol=1e-4))
        if bad and first_diff is None:
            first_diff = o["round"]
    Path(a.out).write_text(json.dumps({"official": theirs, "fgljax": rows, "first_difference": first_diff}))
    print(f"{len(rows)} rounds; first round that differs beyond float noise: {first_diff}")
    for o, f in list(zip(theirs, rows))[:5] + list(zip(theirs, rows))[-3:]:
        print(o["round"], f"val {o['val']:.4f}/{f['val']:.4f} test {o['test']:.4f}/{f['test']:.4f}",
              "align", [round(x[0], 4) if isinstance(x, list) else None for x in o["align"]], [round(x, 4) for x in f["align"]],
              "norm", [round(x, 4) for x in o["coeff_norm"]], [round(x, 4) for x in f["coeff_norm"]])


if __name__ == "__main__":
    main()
