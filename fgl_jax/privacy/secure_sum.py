"""Secure aggregation with pairwise masks over GF(p), tolerant of drop-outs (Bonawitz et al., CCS 2017,
"Practical Secure Aggregation for Privacy-Preserving Machine Learning"), simulated in one program.

The C clients of a round each hold a fixed-point encoded vector x_i in GF(p)^D (`field.quantize`).

    setup     every pair {i, j} agrees a seed s_ij (simulated: drawn from the round key; a real
              deployment derives it by Diffie-Hellman key agreement), and every client draws a
              self-mask seed b_i. Client i Shamir-shares (threshold t) each of its secrets
              {s_ij : j != i} and b_i among all C clients (share of holder h = f(h + 1)).
    masking   client i sends  y_i = x_i + PRG(b_i) + sum_{j>i} PRG(s_ij) - sum_{j<i} PRG(s_ij)  mod p.
    drop-outs the clients of `dropped` set up but never send y_i; U = the survivors.
    unmasking U's shares reconstruct b_i for i in U and s_di for d dropped, i in U (never both
              kinds for one client); the server computes
                  sum_{i in U} y_i - sum_{i in U} PRG(b_i) - sum_{i in U, d dropped} sign(i, d) PRG(s_id)
              with sign(i, d) = +1 if d > i else -1: the masks of pairs inside U cancel, the rest
              are removed, and what is left is sum_{i in U} x_i mod p exactly.

With |U| < t the shares cannot be reconstructed: `secure_sum` refuses (eagerly) or returns ok = False.
A seed is `SEED_WORDS` field elements (62 bits; the PRG is jax's Threefry keyed by them): a simulation
of the protocol's arithmetic and messages, not a cryptographic implementation (no real key agreement,
no authenticated encryption of the shares, honest-but-curious server and clients).

Everything is int64 under `field.x64()` (elements < p <= 2^31 - 1, products < 2^62 reduced at once, as
in `field`), jittable: C, D, t and p are static, `dropped` is data.
"""
from __future__ import annotations

import math
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np

from fgl_jax.privacy import field as F
from fgl_jax.privacy import lcc

__all__ = ["SEED_WORDS", "FIELD_BYTES", "check_threshold", "shamir_share", "lagrange_at_zero", "shamir_reconstruct",
           "prg", "draw_seeds", "mask_inputs", "unmask_sum", "secure_sum", "protocol_bytes", "majority",
           "dropped_count"]

SEED_WORDS = 2          # field elements per PRG seed (2 x 31 bits)
FIELD_BYTES = 4         # one element of GF(p), p < 2^31, on the wire (uint32)


def check_threshold(clients: int, threshold: int, dropped: int = 0) -> None:
    """One line when `threshold` cannot work for `clients` with `dropped` drop-outs.

    Args:
        clients: C, the clients of the round.
        threshold: t, the Shamir threshold.
        dropped: how many of the C clients drop out after the setup.

    Returns:
        None when 1 <= t <= C and at least t clients survive.

    Raises:
        ValueError: t outside 1..C, or fewer than t survivors (their masks could not be removed).
    """
    if not 1 <= threshold <= clients:
        raise ValueError(f"secure aggregation: threshold t={threshold} must be in 1..{clients} (the clients "
                         f"of a round)")
    if clients - dropped < threshold:
        raise ValueError(f"secure aggregation: {dropped} of {clients} clients dropped, leaving {clients - dropped} "
                         f"survivors, fewer than the threshold t={threshold}: the dropped clients' masks "
                         "cannot be removed")


def shamir_share(key: jax.Array, secrets: jax.Array, holders: int, threshold: int,
                 p: int = F.MERSENNE_31) -> jax.Array:
    """Shamir shares of each secret: holder h gets f(h + 1) for f(x) = secret + c_1 x + ... +
    c_{t-1} x^{t-1} with uniform c_k (one polynomial per secret). Any t shares determine the secret;
    any t - 1 of them are uniform and independent of it.

    Args:
        key: draws the coefficients c_k (unused when t = 1: every share is the secret itself).
        secrets: int64 `[...]` field elements in [0, p).
        holders: n, the number of shares per secret.
        threshold: t, the shares needed to reconstruct.
        p: the field's prime.

    Returns:
        int64 `[holders, ...]`: row h is holder h's share of every secret.

    Raises:
        ValueError: unless 1 <= t <= holders < p.
    """
    if not 1 <= threshold <= holders or holders >= p:
        raise ValueError(f"shamir_share: need 1 <= threshold ({threshold}) <= holders ({holders}) < p ({p})")
    with F.x64():
        secrets = jnp.asarray(secrets).astype(jnp.int64)
        xs = jnp.arange(1, holders + 1, dtype=jnp.int64).reshape((holders,) + (1,) * secrets.ndim)
        if threshold == 1:
            return jnp.broadcast_to(secrets, (holders,) + secrets.shape)
        coeffs = lcc.sample_masks(key, threshold - 1, secrets.shape, p)          # [t-1, ...]
        acc = jnp.broadcast_to(coeffs[-1], (holders,) + secrets.shape)
        for k in range(threshold - 3, -1, -1):                                     # Horner, highest first
            acc = F.add(F.mul(acc, xs, p), coeffs[k], p)
        return F.add(F.mul(acc, xs, p), secrets, p)


def _masked_product(values: jax.Array, use: jax.Array, p: int) -> jax.Array:
    """prod_j values[..., j] over the j with use[..., j] (mod p); values int64 [..., n] in [0, p)."""
    values = jnp.where(use, values, 1)

    def step(acc, v):
        return F.mul(acc, v, p), None

    out, _ = jax.lax.scan(step, jnp.ones(values.shape[:-1], jnp.int64), jnp.moveaxis(values, -1, 0))
    return out


def lagrange_at_zero(holders: jax.Array, p: int = F.MERSENNE_31) -> jax.Array:
    """Lagrange weights at x = 0 through the points x_h = h + 1 of the holders H:
    lam_h = prod_{g in H, g != h} x_g / (x_g - x_h), and 0 for h outside H.

    Args:
        holders: bool `[n]`, which of the n share holders take part.
        p: the field's prime.

    Returns:
        int64 `[n]`: lam_h in [0, p).
    """
    n = holders.shape[0]
    with F.x64():
        x = jnp.arange(1, n + 1, dtype=jnp.int64)
        use = holders[None, :] & ~jnp.eye(n, dtype=bool)                          # [h, g]
        num = _masked_product(jnp.broadcast_to(x[None, :], (n, n)), use, p)
        den = _masked_product(F.sub(x[None, :], x[:, None], p), use, p)
        return jnp.where(holders, F.mul(num, F.inv(den, p), p), 0)


def shamir_reconstruct(shares: jax.Array, holders: jax.Array, p: int = F.MERSENNE_31) -> jax.Array:
    """The secrets from the shares of some holders: sum_h lam_h share_h mod p (`lagrange_at_zero`).

    Args:
        shares: int64 `[n, ...]`, row h holder h's shares (`shamir_share`); rows outside `holders` are
            ignored.
        holders: bool `[n]`, the holders whose shares are used: at least t of them, else the result
            is garbage (nothing checks it).
        p: the field's prime.

    Returns:
        int64 `[...]`: the secrets.
    """
    lam = lagrange_at_zero(holders, p)
    with F.x64():
        terms = F.mul(lam.reshape((-1,) + (1,) * (shares.ndim - 1)), shares, p)
        return F.reduce(terms.sum(0), p, bound=shares.shape[0] * p)


def prg(seed: jax.Array, size: int, p: int = F.MERSENNE_31) -> jax.Array:
    """The mask PRG(seed): uniform over GF(p), a deterministic function of the seed.

    Args:
        seed: int64 `[W]`, W = SEED_WORDS field elements (jax's Threefry key, keyed by the first and
            folded with the rest).
        size: D, the length of the mask.
        p: the field's prime.

    Returns:
        int64 `[size]` in [0, p).
    """
    with F.x64():
        key = jax.random.key(seed[0].astype(jnp.uint32))
        for w in seed[1:]:
            key = jax.random.fold_in(key, w.astype(jnp.uint32))
        return lcc.sample_masks(key, 1, (size,), p)[0]


def draw_seeds(key: jax.Array, clients: int, p: int = F.MERSENNE_31) -> tuple[jax.Array, jax.Array]:
    """The seeds of a round, uniform over GF(p)^W: the outcome of the simulated key agreement.

    Args:
        key: the round's seed key.
        clients: C, the clients of the round.
        p: the field's prime.

    Returns:
        A pair (pair, own): pair seeds int64 `[C, C, W]`, symmetric (s_ij = s_ji; the diagonal is never
            used), and self-mask seeds int64 `[C, W]`, W = SEED_WORDS.
    """
    k_pair, k_self = jax.random.split(key)
    with F.x64():
        u = lcc.sample_masks(k_pair, 1, (clients, clients, SEED_WORDS), p)[0]
        upper = jnp.triu(jnp.ones((clients, clients), bool), 1)[..., None]
        pair = jnp.where(upper, u, jnp.swapaxes(u, 0, 1))
        return pair, lcc.sample_masks(k_self, 1, (clients, SEED_WORDS), p)[0]


def _signed_mask_sum(seeds: jax.Array, signs: jax.Array, size: int, p: int) -> jax.Array:
    """sum_j signs[j] PRG(seeds[j]) mod p over j with signs[j] in {-1, 0, +1} (0: skipped, no PRG run)."""

    def step(acc, sj):
        seed, sign = sj

        def apply(a):
            m = prg(seed, size, p)
            return jnp.where(sign > 0, F.add(a, m, p), F.sub(a, m, p))

        return jax.lax.cond(sign != 0, apply, lambda a: a, acc), None

    out, _ = jax.lax.scan(step, jnp.zeros((size,), jnp.int64), (seeds, signs))
    return out


def mask_inputs(x: jax.Array, pair: jax.Array, own: Optional[jax.Array], p: int = F.MERSENNE_31) -> jax.Array:
    """Every client's masked vector y_i = x_i + PRG(b_i) + sum_{j>i} PRG(s_ij) - sum_{j<i} PRG(s_ij).

    Client by client, each expanding its own C - 1 pair masks as it does in the protocol (expanding
    each pair's mask once into two rows of a `[C, D]` carry measured no faster on XLA:CPU).

    Args:
        x: int64 `[C, D]`, the clients' field-encoded vectors.
        pair: int64 `[C, C, W]`, the pair seeds s_ij (`draw_seeds`).
        own: int64 `[C, W]`, the self-mask seeds b_i, or None (no self-mask: the PRG(b_i) term is left
            out).
        p: the field's prime.

    Returns:
        int64 `[C, D]`: y, row i client i's upload.
    """
    c, d = x.shape
    with F.x64():
        idx = jnp.arange(c)
        signs = jnp.sign(idx[None, :] - idx[:, None]).astype(jnp.int32)          # [i, j]: +1 for j > i

        def client(args):
            xi, seeds, sgn, b = args
            y = F.add(xi, _signed_mask_sum(seeds, sgn, d, p), p)
            return y if b is None else F.add(y, prg(b, d, p), p)

        return jax.lax.map(client, (F._as_i64(x), pair, signs, own))


def unmask_sum(y: jax.Array, dropped: jax.Array, pair_shares: jax.Array, own_shares: Optional[jax.Array],
               p: int = F.MERSENNE_31) -> jax.Array:
    """The server's side: the survivors' sum from their masked vectors and the shares they hold
    (module docstring, "unmasking").

    Args:
        y: int64 `[C, D]`, the masked vectors (`mask_inputs`); rows of dropped clients are never read.
        dropped: bool `[C]`, the clients that never sent y_i; U = the others.
        pair_shares: int64 `[C_owner, C_holder, C, W]`, owner i's shares of its pair seeds s_ij.
        own_shares: int64 `[C_owner, C_holder, W]`, owner i's shares of its self-mask seed b_i, or
            None when y carries no self-masks.
        p: the field's prime.

    Returns:
        int64 `[D]`: sum_{i in U} x_i mod p; garbage when fewer than t clients survive (nothing checks
            it here: `secure_sum` does).
    """
    c, d = y.shape
    alive = ~dropped
    with F.x64():
        total = F.reduce(jnp.where(alive[:, None], y, 0).sum(0), p, bound=c * p)
        # what the survivors' shares reconstruct: s_dj of every dropped d (pair_rec[d, j]) and b_i of
        # every survivor (the server asks for one or the other of each client, never both)
        rec = lambda s: shamir_reconstruct(s, alive, p)                    # s: [C_holder, ...]
        pair_rec = jax.vmap(rec)(pair_shares)                                   # [C_owner, C, W]
        idx = jnp.arange(c)
        # survivor i's vector holds sign(i, d) PRG(s_id) for each dropped d: remove it, seen from d's row
        signs = jnp.where(dropped[:, None] & alive[None, :], jnp.sign(idx[:, None] - idx[None, :]), 0)  # [d, i]
        dangling = jax.lax.map(lambda a: _signed_mask_sum(a[0], a[1].astype(jnp.int32), d, p), (pair_rec, signs))
        total = F.sub(total, F.reduce(dangling.sum(0), p, bound=c * p), p)
        if own_shares is not None:
            own_rec = jax.vmap(rec)(own_shares)                                 # [C, W]
            selfs = jax.lax.map(lambda a: _signed_mask_sum(a[0][None], a[1][None].astype(jnp.int32), d, p),
                                (own_rec, alive))
            total = F.sub(total, F.reduce(selfs.sum(0), p, bound=c * p), p)
        return total


def secure_sum(x: jax.Array, dropped: jax.Array, key: jax.Array, threshold: int, p: int = F.MERSENNE_31,
               self_mask: bool = True) -> tuple[jax.Array, jax.Array]:
    """The survivors' sum through the whole protocol (module docstring): seeds, shares, masking,
    unmasking, in one jitted program.

    Args:
        x: int64 `[C, D]` field elements (fixed-point encoded updates, `field.quantize`).
        dropped: bool `[C]`, the clients that drop out after the setup; concrete or traced.
        key: the round's key (seeds and share polynomials).
        threshold: t, the Shamir threshold (static).
        p: the field's prime (static).
        self_mask: whether each client adds a self-mask PRG(b_i) (Bonawitz et al.'s double masking).

    Returns:
        A pair (total, ok): total int64 `[D]`, sum_{i not dropped} x_i mod p; ok bool `[]`, at least t
            survivors (total is garbage otherwise; only reachable when `dropped` is traced).

    Raises:
        ValueError: t outside 1..C, or, when `dropped` is concrete (not traced), fewer than t survivors.
    """
    c, _ = x.shape
    dropped = jnp.asarray(dropped, bool)
    check_threshold(c, threshold)
    if not isinstance(dropped, jax.core.Tracer):
        check_threshold(c, threshold, int(np.asarray(dropped).sum()))
    with F.x64():  # one program (eagerly, every field op would be its own dispatch)
        return _secure_sum_jit(F._as_i64(x), dropped, key, threshold=threshold, p=p, self_mask=self_mask)


def _secure_sum_impl(x: jax.Array, dropped: jax.Array, key: jax.Array, threshold: int, p: int,
                     self_mask: bool) -> tuple[jax.Array, jax.Array]:
    c, _ = x.shape
    k_seed, k_pair, k_own = jax.random.split(key, 3)
    pair, own = draw_seeds(k_seed, c, p)
    with F.x64():
        # owner i's shares of its row s_i. [C, W] for holders 0..C-1: [C_owner, C_holder, C, W]
        pair_shares = jax.vmap(lambda k, s: shamir_share(k, s, c, threshold, p))(jax.random.split(k_pair, c), pair)
        own_shares = (jax.vmap(lambda k, s: shamir_share(k, s, c, threshold, p))(jax.random.split(k_own, c), own)
                      if self_mask else None)
        y = mask_inputs(x, pair, own if self_mask else None, p)
        out = unmask_sum(y, dropped, pair_shares, own_shares, p)
    return out, (c - dropped.sum()) >= threshold


_secure_sum_jit = jax.jit(_secure_sum_impl, static_argnames=("threshold", "p", "self_mask"))


def protocol_bytes(clients: int, dim: int, dropped: int, self_mask: bool = True) -> dict:
    """Bytes of one round of the protocol above, each field element FIELD_BYTES on the wire, shares
    relayed through the server (Bonawitz et al.'s star topology):

      setup      each client sends each of the C - 1 others its shares of its C - 1 pair seeds and
                 (self_mask) its self seed: (C - 1) (C - 1 + s) W elements, s = 1 with a self-mask
      masking    each survivor sends y_i: D elements
      unmasking  each survivor sends, for every dropped d, its share of s_dj for every survivor j
                 ((C - n_d) W each), and (self_mask) its share of b_j for every survivor j

    Args:
        clients: C, the clients of the round.
        dim: D, the length of each client's vector.
        dropped: n_d, the clients that drop out after the setup.
        self_mask: whether the protocol uses self-masks.

    Returns:
        A dict of byte counts: client_up (one survivor's upload), dropped_up (one dropped client's, setup
            only), server_in (what the server receives), server_out (what it relays: the setup shares).
    """
    c, n_d, w, e = clients, dropped, SEED_WORDS, FIELD_BYTES
    n_u = c - n_d
    s = 1 if self_mask else 0
    setup = (c - 1) * (c - 1 + s) * w * e
    unmask = (n_d * n_u * w + s * n_u * w) * e
    client_up = setup + dim * e + unmask
    return {"client_up": client_up, "dropped_up": setup, "server_in": n_u * client_up + n_d * setup,
            "server_out": c * setup}


def majority(clients: int) -> int:
    """The default threshold: a strict majority of the round's clients.

    Args:
        clients: C, the clients of the round.

    Returns:
        floor(C / 2) + 1.
    """
    return clients // 2 + 1


def dropped_count(clients: int, fraction: float) -> int:
    """Clients that drop out of a round of `clients` at drop-out fraction `fraction`.

    Args:
        clients: C, the clients of the round.
        fraction: f, the drop-out fraction.

    Returns:
        floor(f C), with f C first rounded to 9 decimals so that float error (0.29 * 100 =
            28.999...) does not lose a client.
    """
    return int(math.floor(round(fraction * clients, 9)))
