"""HiFGL (Guo et al., KDD 2024): cross-silo cross-device FGL with Secret Message Passing.

Roles (spec §1): every node is a device, every subgraph a silo (a client), one server. Devices hold
their features and neighbour lists; silos hold only device lists, a model and LCC parameters mu_i;
the server averages silo models. One layer of SecMP (Fig. 3 / Algorithm 1):

    source device v:  m_v = (h_v W) / sqrt(deg_v)                                  (Eq. 2 + projection)
                      shares of m_v under the TARGET silo's mu, fresh masks z       (Eq. 4-5)
    target device u:  S_k(u) = sum_{v in N(u)} share_k(v)   (field sums, per share index)
    silo of u:        decodes the aggregate only: sum_v m_v  (lambda weights, exact in F_p)
    target device u:  h_u' = agg_u / sqrt(deg_u) [+ self term] + b, ReLU           (Eq. 3)

    config.py     HiFGLConfig: the one schema (paper defaults, ranges, help)
    data.py       HiFGLData, split / silos / arrays (host, once)
    secmp.py      the parties' functions, SiloCodes, secure_neighbour_sum, SecureSum (the `aggregate`)
    model.py      nn.GCN / nn.SAGE with SecureSum; forward (straight-through gradients)
    algorithm.py  HiFGLState, hifgl(cfg, in_dim, num_classes) -> FederatedAlgorithm
    program.py    build(cfg) -> Program, registered as system "hifgl"

    import fgl_jax as fj
    res = fj.run_config(fj.HiFGLConfig(dataset="citeseer"), out="runs/h")

Public API (what notebooks, benchmarks and experiments import): the names in `__all__` below. The
paper's cells and tables live in the checkout's experiments/hifgl/ (`fgl-jax reproduce hifgl`).
"""
from fgl_jax.systems.hifgl.algorithm import HiFGLState, accuracies, hifgl, silo_train_acc
from fgl_jax.systems.hifgl.config import MODELS, MODES, NORMS, PAPER_SPLIT, Z_MODES, HiFGLConfig, split_sizes
from fgl_jax.systems.hifgl.data import HiFGLData, Prepared, make_hifgl_data, prepare, split_graph
from fgl_jax.systems.hifgl.model import authors_code_propagate, forward, network
from fgl_jax.systems.hifgl.program import build
from fgl_jax.systems.hifgl.secmp import (SecureSum, SiloCodes, device_aggregate, device_encode, sample_codes,
                                         secure_neighbour_sum, server_average, silo_decode)

__all__ = ["HiFGLConfig", "HiFGLData", "HiFGLState", "MODELS", "MODES", "NORMS", "PAPER_SPLIT", "Prepared",
           "SecureSum", "SiloCodes", "Z_MODES", "accuracies", "authors_code_propagate", "build", "device_aggregate", "device_encode",
           "forward", "hifgl", "make_hifgl_data", "network", "prepare", "sample_codes", "secure_neighbour_sum",
           "server_average", "silo_decode", "silo_train_acc", "split_graph", "split_sizes"]
