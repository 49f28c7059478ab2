"""One-bit LDP feature encoder with binning (Lumos §VI-A, Eqs. 26-27; fixed Eq. 29).

Device u holds x_u in [a, b]^d and must send a feature to each device w that holds u as a
leaf. Mechanism (all pure, jittable, vectorised over devices):

1. per-coordinate budget eps' (`budget`, see BUDGETS): "per-recipient" (default)
   eps' = eps / ceil(d / B(u)), so that every recipient's bin costs at most eps in total;
   "per-coordinate-average" eps' = eps * B(u) / d (the paper's Thm 4, B(u) = wl(u)), which is eps
   only on average over the bins: when B(u) does not divide d, a recipient of a ceil(d/B)-sized
   bin spends ceil(d/B) B / d * eps, up to ~2 eps (e.g. B = 127, d = 128: bin of 2 at 127/128 eps each);
2. encode every coordinate once (Eq. 26):
       Pr[x'_i = 1] = 1/(e^eps' + 1) + (x_i - a)/(b - a) * (e^eps' - 1)/(e^eps' + 1);
3. bin: a random permutation of the d coordinates split into B(u) near-equal chunks; the k-th
   recipient gets only chunk k, every other coordinate is set to 0.5 (no information);
4. recover (Eq. 27; the printed Eq. 29 ends in "+(a-b)/2", a typo):
       x''_i = (x'_i - 1/2)(b - a)(e^eps' + 1)/(e^eps' - 1) + (a + b)/2,
   so 0.5 decodes to the midpoint (a+b)/2, and E[x''_i] = x_i on an encoded coordinate (Thm 3).

Unencoded (0.5) coordinates make a partial vector biased towards the midpoint by a factor
~|bin|/d; `rescale=True` multiplies the encoded deviations by d/|bin| (LPGNN-style) to make the
vector unbiased over the bin draw. Default is paper-literal (no rescale).

`prior_var=s2` (beyond the paper) post-processes the recovered value with the linear MMSE
shrinkage towards the midpoint, x_hat = mid + lam (x'' - mid), lam = s2 / (s2 + (b-a)^2 C^2 / 4),
where s2 is a public prior variance of a feature (dataset-wide, like the public bounds) and
(b-a)^2 C^2/4 the mechanism's variance per encoded coordinate. Post-processing of an eps-LDP
output is eps-LDP; it trades the unbiasedness of Thm 3 for a variance C^2 times smaller, which
keeps the shared first-layer weights from being swamped by noise of magnitude C >> b - a.

`recipient_epsilon` is the accounting: the budget every (sender, recipient) pair realises,
|bin| * eps' (sequential composition over the bin's coordinates; the other coordinates are 0.5
whatever x is, and the bin assignment is independent of x).

Privacy caveats (spec §4.1, documented, not "fixed"): recipients that collude see all d
coordinates, d * eps' <= eps * B(u) under either budget; the count of non-midpoint entries and
the magnitude of C reveal B(u); leaf embeddings sent later in POOL are not protected by this
mechanism.
"""
from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


def check_params(eps: float, a: float, b: float) -> None:
    """Host-side validation (jit cannot raise on values): eps > 0, a < b, all finite except eps=inf.

    Args:
        eps: the LDP budget epsilon.
        a: the public lower feature bound.
        b: the public upper feature bound, > a.

    Returns:
        None.

    Raises:
        ValueError: eps not > 0 (or NaN), non-finite bounds, or a >= b.
    """
    if not (isinstance(eps, (int, float)) and eps > 0) or math.isnan(eps):
        raise ValueError(f"one-bit LDP: epsilon must be > 0, got {eps!r}")
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"one-bit LDP: feature bounds must be finite, got a={a!r}, b={b!r}")
    if not a < b:
        raise ValueError(f"one-bit LDP: feature bounds need a < b, got a={a!r}, b={b!r} "
                         "(a constant feature carries no information: drop it or scale features to [0, 1])")


BUDGETS = ("per-recipient", "per-coordinate-average")


def check_budget(budget: str) -> None:
    """Host-side check of a budget name.

    Args:
        budget: "per-recipient" or "per-coordinate-average" (`BUDGETS`).

    Returns:
        None.

    Raises:
        ValueError: an unknown budget.
    """
    if budget not in BUDGETS:
        raise ValueError(f"one-bit LDP: budget must be one of {BUDGETS}, got {budget!r}")


def coordinate_budget(eps: float, num_bins: Array, d: int, budget: str = "per-recipient") -> Array:
    """eps' per device [N]: eps / ceil(d / B) ("per-recipient": the largest bin, hence every
    recipient, costs <= eps) or eps * B / d ("per-coordinate-average": paper, Thm 4).

    Args:
        eps: the budget epsilon.
        num_bins: int `[N]`, B(u) per device (clipped to [1, d]).
        d: the feature dimension.
        budget: "per-recipient" or "per-coordinate-average".

    Returns:
        float32 `[N]`, eps' per device.

    Raises:
        ValueError: an unknown budget.
    """
    check_budget(budget)
    num_bins = jnp.clip(jnp.asarray(num_bins, jnp.float32), 1.0, float(d))
    if budget == "per-recipient":
        return eps / jnp.ceil(d / num_bins)
    return eps * num_bins / d


def encode_probs(x: Array, eps_coord: Array, a: float = 0.0, b: float = 1.0) -> Array:
    """Eq. 26: Pr[x' = 1] per coordinate.

    Args:
        x: `[..., d]` features (clipped to [a, b]).
        eps_coord: eps', broadcast against `x` (e.g. `[..., 1]`).
        a: the public lower feature bound.
        b: the public upper feature bound, > a.

    Returns:
        `[..., d]` probabilities in [1/(e^eps'+1), e^eps'/(e^eps'+1)].
    """
    e = jnp.exp(eps_coord)
    t = (jnp.clip(x, a, b) - a) / (b - a)
    return 1.0 / (e + 1.0) + t * (e - 1.0) / (e + 1.0)


def recover(bits: Array, eps_coord: Array, a: float = 0.0, b: float = 1.0) -> Array:
    """Eq. 27: x'' = (x' - 1/2)(b - a)(e^eps' + 1)/(e^eps' - 1) + (a + b)/2; x' in {0, 0.5, 1}.

    Args:
        bits: x', `[..., d]` in {0, 0.5, 1} (0.5: not encoded).
        eps_coord: eps', broadcast against `bits`.
        a: the public lower feature bound.
        b: the public upper feature bound, > a.

    Returns:
        x'', `[..., d]`; 0.5 decodes to the midpoint (a + b)/2.
    """
    e = jnp.exp(eps_coord)
    c = (e + 1.0) / (e - 1.0)
    return (bits - 0.5) * (b - a) * c + 0.5 * (a + b)


def encode_bits(key: Array, x: Array, eps_coord: Array, a: float = 0.0, b: float = 1.0) -> Array:
    """Sample x' in {0, 1} (float) per coordinate by Eq. 26.

    Args:
        key: PRNG key.
        x: `[N, d]` features (clipped to [a, b]).
        eps_coord: `[N]`, eps' per device.
        a: the public lower feature bound.
        b: the public upper feature bound, > a.

    Returns:
        float32 `[N, d]` of 0.0 and 1.0.
    """
    p = encode_probs(x, eps_coord[..., None], a, b)
    return (jax.random.uniform(key, x.shape) < p).astype(jnp.float32)


def make_bins(key: Array, num_bins: Array, d: int) -> Array:
    """Bin id per coordinate, int32 [N, d]: a uniform random permutation split into B(u)
    near-equal chunks (sizes floor(d/B) or ceil(d/B); spec caveat (ii)).

    Args:
        key: PRNG key.
        num_bins: int `[N]`, B(u) per device, in [1, d] (clipped).
        d: the feature dimension.

    Returns:
        int32 `[N, d]`, each coordinate's bin in [0, B(u)).
    """
    n = num_bins.shape[0]
    rank = jnp.argsort(jnp.argsort(jax.random.uniform(key, (n, d)), axis=1), axis=1)
    bins = jnp.clip(num_bins, 1, d).astype(jnp.int32)[:, None]
    return (rank * bins // d).astype(jnp.int32)


def bin_sizes(num_bins: Array, d: int, k: Array) -> Array:
    """|chunk k| for B bins over d coordinates: ceil((k+1) d / B) - ceil(k d / B).

    Args:
        num_bins: int B per entry (clipped to [1, d]), broadcastable with `k`.
        d: the number of coordinates.
        k: int chunk index in [0, B).

    Returns:
        int, the chunk sizes, of the broadcast shape.
    """
    bins = jnp.clip(num_bins, 1, d)
    return -((-(k + 1) * d) // bins) + ((-k * d) // bins)


def recipient_epsilon(eps: float, num_bins, src, recipient_bin, d: int, budget: str = "per-recipient") -> np.ndarray:
    """Realised budget of every (sender, recipient) pair, float64 [P]: |bin| * eps'(sender).

    The recipient sees |bin| coordinates, each eps'-LDP with independent noise, and 0.5 elsewhere
    whatever the input; the bins are drawn independently of the input; so its view is
    (|bin| eps')-LDP by sequential composition, and this is tight (inputs at the two bounds
    reach it). Host-side NumPy (float64), for the run summary and tests.

    Args:
        eps: the budget epsilon.
        num_bins: int `[N]`, B(u).
        src: int `[P]`, as in `onebit_ldp`.
        recipient_bin: int `[P]`, as in `onebit_ldp`.
        d: the feature dimension.
        budget: "per-recipient" or "per-coordinate-average".

    Returns:
        float64 `[P]`.

    Raises:
        ValueError: an unknown budget, or a recipient_bin outside [0, B(sender)).
    """
    check_budget(budget)
    num_bins = np.clip(np.asarray(num_bins, np.int64), 1, d)
    src, k = np.asarray(src, np.int64), np.asarray(recipient_bin, np.int64)
    bins = num_bins[src]
    if np.any((k < 0) | (k >= bins)):
        raise ValueError("one-bit LDP: recipient_bin must lie in [0, B(sender))")
    size = -((-(k + 1) * d) // bins) + ((-k * d) // bins)              # ceil((k+1)d/B) - ceil(kd/B)
    per_coord = (eps / np.ceil(d / bins)) if budget == "per-recipient" else eps * bins / d
    return size * per_coord


def mmse_factor(eps_coord: Array, prior_var: float, a: float = 0.0, b: float = 1.0) -> Array:
    """lam = s2 / (s2 + Var[x'']) with Var[x''] <= (b-a)^2 C^2 / 4, C = (e^eps'+1)/(e^eps'-1).

    Args:
        eps_coord: eps' (any shape).
        prior_var: s2, the public prior variance of a feature, > 0.
        a: the public lower feature bound.
        b: the public upper feature bound, > a.

    Returns:
        lam in (0, 1), of `eps_coord`'s shape.
    """
    e = jnp.exp(eps_coord)
    c = (e + 1.0) / (e - 1.0)
    return prior_var / (prior_var + 0.25 * (b - a) ** 2 * c ** 2)


@partial(jax.jit, static_argnames=("d", "budget", "rescale", "a", "b", "prior_var"))
def _onebit(key, x, num_bins, src, recipient_bin, eps, d, budget, rescale, a, b, prior_var=None):
    k_bits, k_bins = jax.random.split(key)
    eps_coord = coordinate_budget(eps, num_bins, d, budget)                  # [N]
    bits = encode_bits(k_bits, x, eps_coord, a, b)                           # [N, d], noise drawn once
    bin_of = make_bins(k_bins, num_bins, d)                                  # [N, d]
    rec = recover(bits, eps_coord[:, None], a, b)                            # [N, d]
    mid = 0.5 * (a + b)
    dev = rec[src] - mid                                                     # [P, d]
    if rescale:
        size = bin_sizes(jnp.clip(num_bins[src], 1, d), d, recipient_bin).astype(jnp.float32)
        dev = dev * (d / size)[:, None]
    if prior_var is not None:
        dev = dev * mmse_factor(eps_coord, prior_var, a, b)[src][:, None]
    sent = bin_of[src] == recipient_bin[:, None]                             # coordinates in the bin
    return jnp.where(sent, mid + dev, mid), eps_coord


def onebit_ldp(key: Array, x: Array, num_bins: Array, src: Array, recipient_bin: Array, eps: float,
               a: float = 0.0, b: float = 1.0, budget: str = "per-recipient", rescale: bool = False,
               prior_var: float | None = None) -> tuple[Array, Array]:
    """Recovered partial features for every (sender, recipient) pair.

    eps = inf (no noise) is NOT supported (use raw features instead); eps must be > 0.

    Args:
        key: PRNG key.
        x: `[N, d]` features in [a, b] (N devices).
        num_bins: int `[N]`, B(u) (clipped to [1, d]; spec caveat iii).
        src: int `[P]`, the sender u of pair p.
        recipient_bin: int `[P]` in [0, B(src)), the bin the recipient receives.
        eps: the budget epsilon, > 0.
        a: the public lower feature bound.
        b: the public upper feature bound, > a.
        budget: "per-recipient" (every recipient's view is eps-LDP) or "per-coordinate-average"
            (the paper's eps' = eps B / d; up to ~2 eps for some recipients), see the module docstring.
        rescale: multiply the encoded deviations by d/|bin| (unbiased over the bin draw).
        prior_var: optional MMSE shrinkage (module docstring); None = paper-literal recovery.

    Returns:
        `(x'', eps')`: x'' `[P, d]` in {mid, (a+b)/2 ± (b-a)C/2} (other values with `rescale` or
        `prior_var`), eps' `[N]`.

    Raises:
        ValueError: an unknown budget, a bad prior_var, eps or bounds, or x not `[N, d]`.
    """
    check_budget(budget)
    if prior_var is not None and not (math.isfinite(prior_var) and prior_var > 0):
        raise ValueError(f"one-bit LDP: prior_var must be a finite number > 0, got {prior_var!r}")
    check_params(float(eps), float(a), float(b))
    if x.ndim != 2:
        raise ValueError(f"one-bit LDP: x must be [N, d], got shape {x.shape}")
    return _onebit(key, jnp.asarray(x, jnp.float32), jnp.asarray(num_bins, jnp.int32), jnp.asarray(src, jnp.int32),
                   jnp.asarray(recipient_bin, jnp.int32), jnp.float32(eps), d=int(x.shape[1]),
                   budget=budget, rescale=bool(rescale), a=float(a), b=float(b),
                   prior_var=None if prior_var is None else float(prior_var))


# ---------------------------------------------------------------------------------------------
# The encoder of the authors' public code (issue 49), an opt-in variant, NOT the printed mechanism

def authors_code_encode(key: Array, x: Array, src: Array, eps: Array, d: int) -> Array:
    """The per-pair encoder of the Lumos authors' public code (``tree_constructor.py``, ``encode``),
    as that code would run with ``d`` read as the feature dimension (as published it fails at
    ``n, d = x.size()`` on a 1-D feature vector):

        alpha, beta = max(x_u), min(x_u)            (the sender's own feature range)
        e_m = exp(exp(eps / m_u))                    (m_u = recipients of u: a double exponential)
        p   = (x_u - alpha) / (beta - alpha);  Pr[t = 1] = (p (e_m - 1) + 1) / (e_m + 1)
        x'  = d (beta - alpha) / (2 m_u) * (e_m + 1) / (e_m - 1) * (2t - 1) + (alpha + beta) / 2

    drawn afresh for every (sender, recipient) pair, all d coordinates to every recipient (no bins).
    A sender whose features are all equal (alpha = beta, where the code divides by zero) sends them
    unchanged. Computed with tanh(c / 2) = (e^c - 1) / (e^c + 1), c = exp(eps / m_u), so a large
    budget does not overflow.

    Its privacy (`authors_code_epsilon`): each coordinate is a randomised response with ratio e_m,
    i.e. exp(eps / m_u)-LDP, and a recipient sees all d of them: d * exp(eps / m_u) per recipient,
    not eps; and the two output values reveal alpha + beta and beta - alpha, the sender's feature
    minimum and maximum, exactly. Its mean is alpha + (d / m_u)(x - alpha) - ..., unbiased only when
    m_u = d.

    Args:
      key: PRNG key of the draw.
      x: float `[N, d]` features (any range: the code uses each vector's own min and max).
      src: int `[P]` the sender of each (sender, recipient) pair.
      eps: scalar budget (traced; > 0).
      d: the feature dimension (static).

    Returns:
      float `[P, d]`: what each recipient receives.
    """
    n = x.shape[0]
    m = jnp.maximum(jnp.bincount(src, length=n), 1).astype(jnp.float32)[src]          # [P]
    xs = x[src]                                                                         # [P, d]
    alpha, beta = xs.max(axis=1, keepdims=True), xs.min(axis=1, keepdims=True)          # [P, 1]
    span = beta - alpha
    flat = span == 0
    p = jnp.where(flat, 0.5, (xs - alpha) / jnp.where(flat, 1.0, span))
    c = jnp.minimum(jnp.exp(jnp.asarray(eps, jnp.float32) / m), 80.0)[:, None]          # ln e_m, [P, 1]
    th = jnp.tanh(c / 2)                                                                # (e_m-1)/(e_m+1)
    prob = p * th + (1 - th) / 2
    t = jax.random.bernoulli(key, prob).astype(x.dtype)
    out = d * span / (2 * m[:, None]) / th * (2 * t - 1) + (alpha + beta) / 2
    return jnp.where(flat, xs, out)


def authors_code_epsilon(eps: float, src, n: int, d: int) -> np.ndarray:
    """The budget each (sender, recipient) pair realises under `authors_code_encode`: d coordinates,
    each exp(eps / m_u)-LDP, composed: d * exp(eps / m_u). The exact leak of the sender's feature
    minimum and maximum comes on top and has no epsilon.

    Args:
        eps: the budget the run names.
        src: int `[P]` the sender of each pair (m_u: how many pairs u sends).
        n: N, the number of devices.
        d: the feature dimension.

    Returns:
        float64 `[P]`: each pair's realised epsilon (inf where it overflows).
    """
    src = np.asarray(src)
    m = np.maximum(np.bincount(src, minlength=n), 1).astype(np.float64)[src]
    with np.errstate(over="ignore"):
        return d * np.exp(eps / m)
