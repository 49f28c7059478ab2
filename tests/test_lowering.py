"""The engine lowers Threefry unrolled on CPU (`fgl_jax.federated.lowering`): the same random bits
as jax's own lowering, checked against Random123's published known answers and against a separate
process that uses jax's default (rolled) lowering."""
import json
import subprocess
import sys

import jax
import numpy as np

from fgl_jax.federated import run as _engine  # noqa: F401 - importing the engine applies the lowering
from fgl_jax.federated.lowering import unrolled_threefry

# Threefry-2x32 with 20 rounds: (key, counter) -> output, from the Random123 known-answer tests
KNOWN = [(([0, 0], [0, 0]), (0x6B200159, 0x99BA4EFE)),
         (([0xFFFFFFFF, 0xFFFFFFFF], [0xFFFFFFFF, 0xFFFFFFFF]), (0x1CB996FC, 0xBB002BE7)),
         (([0x13198A2E, 0x03707344], [0x243F6A88, 0x85A308D3]), (0xC4923A9C, 0x483DF7A0))]

DRAWS = """
import json, jax, numpy as np
keys = jax.random.split(jax.random.key(7), 3)
bern = jax.jit(jax.vmap(lambda k: jax.random.bernoulli(k, 0.5, (33, 5))))(keys)
bits = jax.jit(lambda k: jax.random.bits(jax.random.fold_in(k, 11), (70,)))(jax.random.key(3))
print(json.dumps({"bern": np.asarray(bern).astype(int).tolist(), "bits": np.asarray(bits).tolist(),
                  "while": jax.jit(jax.random.split).lower(jax.random.key(0)).as_text().count("stablehlo.while")}))
"""


def _draws(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_unrolled_threefry_gives_the_known_answers_without_a_loop():
    from jax._src.random.threefry2x32 import threefry_2x32
    assert unrolled_threefry()
    for (key, count), expected in KNOWN:
        got = jax.jit(threefry_2x32)(np.uint32(key), np.uint32(count))
        assert tuple(int(v) for v in got) == expected
    assert jax.jit(jax.random.split).lower(jax.random.key(0)).as_text().count("stablehlo.while") == 0


def test_same_bits_as_jax_default_lowering():
    default = _draws(DRAWS)  # a fresh process that never imports fgl_jax: jax's rolled loop
    assert default["while"] > 0
    ns: dict = {}
    exec(DRAWS.replace("print(", "result = ("), ns)  # this process: the engine's lowering
    mine = json.loads(ns["result"])
    assert mine["while"] == 0
    assert mine["bern"] == default["bern"] and mine["bits"] == default["bits"]
