"""benchmarks/peers/flops.py: the matrix-product FLOPs read from a lowered program equal the count the
operands' shapes give (2 per multiply-add), nested calls included; the GIN classifier's training step
computes exactly the products it must (no input gradient of the first layer, whose input is data)."""
import jax
import jax.numpy as jnp
import numpy as np
import optax

from benchmarks.peers.flops import product_flops, training_passes
from fgl_jax import RunConfig
from fgl_jax.graph_batch import pack_clients
from fgl_jax.nn.graph import GraphClassifier
from tests.test_graph_batch import toy_set


def test_products_of_a_two_layer_gradient_and_of_a_nested_call():
    n, f, h, k = 11, 5, 7, 3
    args = (jnp.ones((f, h)), jnp.ones((h, k)), jnp.ones((n, f)))

    def loss(w1, w2, x):
        return jnp.tanh(x @ w1).dot(w2).sum()

    grad = jax.jit(jax.grad(loss, argnums=(0, 1)))
    # forward x w1 (tanh' needs it; h w2 is dead: the loss value is not returned, its gradient is
    # constant); gradient: w2's (h^T g), h's (g w2^T), w1's (x^T dh); x is data: no dx
    assert product_flops(grad.lower(*args).as_text()) == 2 * n * (2 * f * h + 2 * h * k)

    inner = jax.jit(lambda a, b: a @ b)
    twice = jax.jit(lambda a, b, x: inner(inner(x, a), b) + inner(inner(x, a), b))
    assert product_flops(twice.lower(*args).as_text()) == 2 * 2 * n * (f * h + h * k)
    batched = jax.jit(lambda a, b: jnp.einsum("bij,bjk->bik", a, b))
    assert product_flops(batched.lower(jnp.ones((4, n, f)), jnp.ones((4, f, h))).as_text()) == 2 * 4 * n * f * h


def test_gin_step_products_are_what_its_shapes_require():
    gs = toy_set(num_graphs=9, features=3, seed=2, classes=3)
    packed = pack_clients(gs, [np.arange(9)], batch_size=9)
    b = jax.tree.map(lambda a: a[0, 0], packed.replace(client_mask=None))
    b = b.replace(client_mask=jnp.asarray(True), train_mask=b.graph_mask)
    hid, layers, classes = 8, 2, 3
    model = GraphClassifier(in_dim=3, hidden=hid, num_classes=classes, num_layers=layers, conv="gin", dropout=0.5)
    params = model.init(jax.random.key(0), b)["params"]

    def loss(p, key):
        logits = model.apply({"params": p}, b, train=True, rngs={"dropout": key})
        return (optax.softmax_cross_entropy_with_integer_labels(logits, b.y) * b.train_mask).sum()

    nodes, graphs = b.x.shape[0], b.y.shape[0]          # padded rows are computed too: count them
    # (rows, in, out) of every dense layer: GIN MLPs on the nodes, then the head on the graphs
    dense = ([(nodes, 3, hid), (nodes, hid, hid)] + [(nodes, hid, hid)] * 2 * (layers - 1)
             + [(graphs, hid, hid), (graphs, hid, classes)])
    forward = sum(2 * r * i * o for r, i, o in dense)
    weight_grads = forward
    input_grads = forward - 2 * nodes * 3 * hid         # all but the first layer's (its input is data)
    lowered = jax.jit(jax.grad(loss)).lower(params, jax.random.key(1)).as_text()
    assert product_flops(lowered) == forward + weight_grads + input_grads


def test_training_passes_are_the_algorithms_own():
    graph = dict(dataset="PROTEINS", task="graph_cls")
    assert training_passes(RunConfig(algorithm="pfedme", pfedme_inner_steps=3, **graph)) == 3
    assert training_passes(RunConfig(algorithm="ditto", **graph)) == 2
    assert training_passes(RunConfig(algorithm="fedavg", **graph)) == 1


def test_floor_is_the_products_at_the_fma_peak_and_bounds_the_speed_up():
    from benchmarks.peers.flops import floor_rate
    from benchmarks.peers.pfllib.compare import bound_columns
    assert floor_rate({"jax": 35.0, "torch": 34.0, "fma": 40.0}) == 40.0
    assert floor_rate({"jax": 35.0, "torch": 34.0, "fma": None}) == 35.0      # no C compiler: the best kernel
    cell = {"machine": {"peak_gflops": {"jax": 35.0, "torch": 34.0, "fma": 40.0}},
            "runs": [{"bound": {"total": 8e9}}, {"bound": {"total": 12e9}}]}
    # 10 GFLOP at 40 GFLOP/s: a 250 ms floor; a peer's 1,000 ms round allows at most 4x
    assert bound_columns(cell, 1000.0) == {"products at peak ms": "250", "largest possible cpu speed-up": "4.0x"}
    assert bound_columns({"machine": {}, "runs": [{}]}, 1000.0)["products at peak ms"] == "-"
