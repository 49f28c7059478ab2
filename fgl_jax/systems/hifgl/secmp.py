"""Secret Message Passing (Fig. 3, Algorithm 1): the parties' functions and the secure neighbour sum.

Privacy boundaries are visible in argument lists: `device_encode` sees one device's message and
the target silo's public encoding matrix; `device_aggregate` sees only coded shares;
`silo_decode` sees only per-target aggregates of shares and its own decoding weights;
`server_average` sees only silo parameters.

`SecureSum` is the secure sum with the signature of `fgl_jax.ops.neighbour_sum`, so it plugs into the
shared `nn.GCN` / `nn.SAGE` layers as their `aggregate` (as jraph's models take
`aggregate_edges_for_nodes_fn`).
"""
from __future__ import annotations

from typing import Any, Optional

import flax
import jax
import jax.numpy as jnp

from fgl_jax.privacy import field as F
from fgl_jax.privacy import lcc
from fgl_jax.reduce import client_mean
from fgl_jax.systems.hifgl.config import HiFGLConfig

PyTree = Any


def device_encode(message_q: jax.Array, masks: jax.Array, u_target: jax.Array, p: Optional[int]) -> jax.Array:
    """A source device encodes its quantised message under its target's silo matrix U (Eq. 4-5).

    message_q [d], masks [T, d], u_target [T+1, T+1] -> shares [T+1, d].
    """
    if p is None:
        return lcc.encode_real(message_q, masks, u_target)
    return lcc.encode(message_q, masks, u_target, p)


def device_aggregate(shares: jax.Array, receivers: jax.Array, num_nodes: int, p: Optional[int]) -> jax.Array:
    """Each target device adds, per share index, the coded shares it received: [T+1, E, d] -> [T+1, N, d]."""
    if p is None:
        return lcc.segment_sum_real(shares, receivers, num_nodes, axis=1)
    return lcc.field_segment_sum(shares, receivers, num_nodes, p, axis=1)


def silo_decode(coded_aggregate: jax.Array, lam: jax.Array, p: Optional[int]) -> jax.Array:
    """The device's silo decodes ONE aggregate with its own lambda: [T+1, d] -> [d] (Dec, §2.2)."""
    if p is None:
        return lcc.decode_real(coded_aggregate, lam)
    return lcc.decode(coded_aggregate, lam, p)


def server_average(silo_params: PyTree) -> PyTree:
    """FedAvg over silos, unweighted (Alg. 1 line 23): [S, ...] -> [...]."""
    return client_mean(silo_params)  # = mean over axis 0, without XLA:CPU's slow leading-axis reduce


@flax.struct.dataclass
class SiloCodes:
    """Per-silo LCC parameters: encoding matrices U [S, T+1, T+1] (shared with the devices that send to
    the silo's members), decoding weights lam [S, T+1] (used only by the silo), fixed masks
    z [S, T, d_max] for z_mode="silo_fixed" (unused otherwise)."""

    U: jax.Array
    lam: jax.Array
    z: jax.Array


def sample_codes(key: jax.Array, cfg: HiFGLConfig, clients: int, width: int) -> SiloCodes:
    """Every silo's mu (once per run): encoding matrix, decoding weights and fixed masks."""
    if cfg.mode == "plain":  # no coding: placeholders keep the state's structure
        t1 = cfg.T + 1
        return SiloCodes(jnp.zeros((clients, t1, t1)), jnp.zeros((clients, t1)), jnp.zeros((clients, cfg.T, width)))
    keys = jax.random.split(key, clients + 1)
    us, lams = [], []
    for i in range(clients):  # host-side, once per run
        mu = lcc.sample_mu(keys[i], cfg.T, cfg.p) if cfg.mode == "field" else lcc.sample_mu_real(keys[i], cfg.T)
        us.append(lcc.encode_matrix(mu))
        lams.append(lcc.decode_coeffs(mu))
    with F.x64():
        if cfg.mode == "field":
            z = lcc.sample_masks(keys[-1], cfg.T, (clients, width), cfg.p)
        else:
            z = lcc.sample_masks_real(keys[-1], cfg.T, (clients, width))
        return SiloCodes(jnp.stack(us), jnp.stack(lams), jnp.moveaxis(z, 0, 1))


def secure_neighbour_sum(messages: jax.Array, senders: jax.Array, receivers: jax.Array, edge_mask: jax.Array,
                         silo: jax.Array, codes: SiloCodes, cfg: HiFGLConfig,
                         key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """sum_{v in N(u)} messages_v for every device u, computed through SecMP. [N, d] -> [N, d] float32.

    silo [N]: each device's silo (whose mu encodes what it receives and decodes its aggregate).
    Also returns an overflow flag: True if any aggregate leaves the fixed-point range of the field.
    """
    n, d = messages.shape
    e = senders.shape[0]
    p = cfg.p if cfg.mode == "field" else None
    with F.x64():
        if p is not None:
            plain_sum = jax.ops.segment_sum(jnp.abs(messages)[senders], receivers, num_segments=n)
            overflow = F.overflow_flag(plain_sum, cfg.frac_bits, p)
            msg = F.quantize(messages, cfg.frac_bits, p)
        else:
            overflow = jnp.array(False)
            msg = messages.astype(jnp.float64)
        target_silo = silo[receivers]
        if cfg.z_mode == "fresh":
            z = lcc.sample_masks(key, cfg.T, (e, d), p) if p is not None else lcc.sample_masks_real(key, cfg.T, (e, d))
        else:
            z = jnp.moveaxis(codes.z[target_silo][:, :, :d], 1, 0)
        shares = jax.vmap(device_encode, in_axes=(0, 1, 0, None), out_axes=1)(
            msg[senders], z, codes.U[target_silo], p)                       # [T+1, E, d]
        shares = jnp.where(edge_mask[None, :, None], shares, 0)            # padded edges send nothing
        coded = device_aggregate(shares, receivers, n, p)                  # [T+1, N, d]
        decoded = jax.vmap(silo_decode, in_axes=(1, 0, None))(coded, codes.lam[silo], p)  # [N, d]
        out = F.dequantize(decoded, cfg.frac_bits, p) if p is not None else decoded.astype(jnp.float32)
    return out.astype(jnp.float32), overflow


class SecureSum:
    """The SecMP neighbour sum as the `aggregate` of `nn.GCN` / `nn.SAGE` (`ops.neighbour_sum` signature).

    Layer i draws its masks from the i-th of `num_layers` keys split from `key`. Every call records
    its field-overflow flag; `overflow()` is their OR (read it after `model.apply`, in the same trace).
    """

    def __init__(self, silo: jax.Array, codes: SiloCodes, cfg: HiFGLConfig, key: jax.Array):
        self.silo, self.codes, self.cfg = silo, codes, cfg
        self.keys = jax.random.split(key, cfg.num_layers)
        self.flags: list = []

    def __call__(self, msg, senders, receivers, edge_mask, num_nodes, layer: int = 0) -> jax.Array:
        if msg.shape[0] != num_nodes:
            raise ValueError(f"SecureSum: messages for {msg.shape[0]} nodes, expected {num_nodes}")
        out, flag = secure_neighbour_sum(msg, senders, receivers, edge_mask, self.silo, self.codes, self.cfg,
                                         self.keys[layer])
        self.flags.append(flag)
        return out

    def overflow(self) -> jax.Array:
        out = jnp.array(False)
        for f in self.flags:
            out = out | f
        return out
