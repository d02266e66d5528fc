"""Architecture variants against plain re-implementations, looped stability, Sinkhorn.

Tolerances: as in tests/test_stack.py, an independent loop-by-loop float64 re-implementation
of a few O(1) layers agrees to ~1e-15; 1e-12 leaves three decades for reordered sums while a
wrong formula (a missing LN, a wrong stream weight, a wrong mask) shows at 1e-3 or more
(the control test measures exactly that gap between the variants and the base).
"""

import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from numerics.stacks.architectures import ARCHS, hilbert_diameter, sinkhorn, sinkhorn_tolerance
from numerics.generated import architectures as gen
from numerics.stacks.spec import StackSpec

F64 = torch.float64
T, D, HEADS, P = 4, 4, 2, 2
TOL = 1e-12  # float64 re-implementation (module docstring)


# ------------------------------------------------------------------ plain re-implementation
def ln(x, g, b):
    out = torch.empty_like(x)
    for t in range(x.shape[0]):
        mu = x[t].mean()
        var = ((x[t] - mu) ** 2).mean()
        out[t] = g * (x[t] - mu) / math.sqrt(var + 1e-5) + b
    return out


def attend(q_in, kv_in, attn, allowed):
    """Σ_heads softmax over allowed (i, j) of q_i·k_j/√d_k, times v_j W_O; empty rows give 0."""
    out = torch.zeros(q_in.shape[0], q_in.shape[1], dtype=F64)
    for hd in range(attn.W_Q.shape[0]):
        q, k, v = q_in @ attn.W_Q[hd], kv_in @ attn.W_K[hd], kv_in @ attn.W_V[hd]
        for i in range(q_in.shape[0]):
            scores = [(j, float(q[i] @ k[j]) / math.sqrt(q.shape[1])) for j in range(kv_in.shape[0])
                      if allowed(i, j)]
            if not scores:
                continue
            m = max(s for _, s in scores)
            w = [(j, math.exp(s - m)) for j, s in scores]
            tot = sum(x for _, x in w)
            out[i] += sum((x / tot) * v[j] for j, x in w) @ attn.W_O[hd]
    return out


def causal(i, j):
    return j <= i


def mlp(z, m, act):
    hid = z @ m.W1 + m.b1
    a = torch.clamp(hid, min=0.0) if act == "relu" else 0.5 * hid * (1 + torch.erf(hid / math.sqrt(2)))
    return a @ m.W2 + m.b2


def plain_preln(layer, X, act="gelu", extra=None):
    h = layer.h
    z = ln(X, layer.ln1.gamma, layer.ln1.beta)
    upd = attend(z, z, layer.attn, causal)
    if extra is not None:
        upd = upd + extra(z)
    U = X + h * upd
    return U + h * mlp(ln(U, layer.ln2.gamma, layer.ln2.beta), layer.mlp, act)


def plain_forward(stack, X):
    arch, base = stack.config.arch, stack.base
    if arch in ("preln", "relu"):
        for layer in base.layers:
            X = plain_preln(layer, X, "relu" if arch == "relu" else "gelu")
        return X
    if arch == "postln":
        for layer in base.layers:
            U = ln(X + layer.h * attend(X, X, layer.attn, causal), layer.ln1.gamma, layer.ln1.beta)
            X = ln(U + layer.h * mlp(U, layer.mlp, "gelu"), layer.ln2.gamma, layer.ln2.beta)
        return X
    if arch == "looped":
        layer, e, x = base.layers[0], X, X
        for _ in range(stack.n_steps):
            new = plain_preln(layer, x)
            if stack.injection:
                dec = torch.exp(-stack.inj_delta * stack.inj_a)
                new = dec * x + stack.inj_delta * (e @ stack.inj_B) + (new - x)
            x = new
        return x
    if arch == "hrm":
        zl, zh = torch.zeros_like(X), X
        Lm, Hm = base.layers
        for _ in range(stack.config.layers):
            for _ in range(stack.k):
                y = zl + zh
                zl = zl + plain_preln(Lm, y) - y
            y = zl + zh
            zh = zh + plain_preln(Hm, y) - y
        return zh
    if arch == "mhc":
        n = stack.n
        streams = [X.clone() for _ in range(n)]
        for ell, layer in enumerate(base.layers):
            E = torch.exp(stack.mix_logits[ell])
            for _ in range(stack.options["sinkhorn_iters"]):
                E = E / E.sum(1, keepdim=True)
                E = E / E.sum(0, keepdim=True)
            al = 1 / (1 + torch.exp(-stack.pre_logits[ell]))
            be = 2 / (1 + torch.exp(-stack.post_logits[ell]))
            y = sum(al[j] * streams[j] for j in range(n))
            inc = plain_preln(layer, y) - y
            streams = [sum(E[i, j] * streams[j] for j in range(n)) + be[i] * inc for i in range(n)]
        return sum(streams) / n
    if arch == "compressed":
        for layer, branch in zip(base.layers, stack.compress):
            def extra(z, branch=branch):
                pooled = torch.stack([z[b * P:(b + 1) * P].mean(0) for b in range(T // P)])
                return stack.compress_gate * attend(z, pooled, branch.attn, lambda i, b: (b + 1) * P - 1 <= i)
            X = plain_preln(layer, X, extra=extra)
        return X
    raise AssertionError(arch)


def make(arch, seed, **kw):
    extra = {"P": P} if arch == "compressed" else {}
    opts = kw.pop("arch_options", None)
    if arch == "looped" and opts is None:
        opts = {"injection": True}
    return StackSpec.of(arch=arch, T=T, d=D, layers=3, heads=HEADS, kernel="causal", seed=seed, arch_options=opts,
                        **extra, **kw).build_arch()


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("seed", [0, 7919])
def test_forward_matches_plain(arch, seed):
    stack = make(arch, seed)
    X = torch.randn(T, D, dtype=F64, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        err = (stack(X) - plain_forward(stack, X)).abs().max()
    assert err < TOL, f"{arch}: {err:.2e}"


@pytest.mark.parametrize("arch", [a for a in ARCHS if a != "preln"])
def test_variant_differs_from_base(arch):
    """Control: each variant changes the computation by far more than TOL (the match test is not vacuous)."""
    stack = make(arch, 3)
    X = torch.randn(T, D, dtype=F64, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        gap = (stack(X) - plain_forward(make("preln", 3), X)).abs().max()
    assert gap > 1e-3, f"{arch} equals preln to {gap:.1e}"


def test_random_stack_dispatch_keeps_default():
    plain = StackSpec(T=T, d=D, layers=2, heads=HEADS, kernel="causal", seed=1).build()
    assert type(plain).__name__ == "Stack" and plain.config.arch == "preln"
    looped = StackSpec(T=T, d=D, layers=2, heads=HEADS, kernel="causal", seed=1, arch="looped").build()
    assert looped.config.arch == "looped" and looped.config.layers == 2


@pytest.mark.parametrize("arch", [a for a in ARCHS if a != "compressed"])
def test_reference_trajectory_is_the_homogeneous_trajectory(arch):
    stack = make(arch, 5)
    xbar = torch.randn(D, dtype=F64, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        ref = stack.reference_trajectory(xbar)  # (n+1, F)
        full = stack.trajectory(xbar.expand(T, D).clone())  # (n+1, T, F)
    assert (full - ref[:, None, :]).abs().max() < TOL


def test_compressed_reference_needs_closed_gate():
    with pytest.raises(ValueError, match="compressed.*no token-homogeneous reference"):
        make("compressed", 0).reference_trajectory(torch.zeros(D, dtype=F64))
    closed = make("compressed", 0, arch_options={"compress_gate": 0.0})
    assert closed.reference_trajectory(torch.ones(D, dtype=F64)).shape == (4, D)


# ------------------------------------------------------------------ looped: stability at any depth
def _increment_bound(layer):
    """Per-token 2-norm bound c on layer(x) − x for a pre-LN layer (decay 0, no slow path).

    ‖LN(x)‖ ≤ ‖γ‖∞√d + ‖β‖; attention is a convex combination of LN₁ rows times W_VO;
    |GELU(s)| ≤ |s|.  So c = h(ℓ₁‖W_VO‖ + (ℓ₂‖W₁‖ + ‖b₁‖)‖W₂‖ + ‖b₂‖).
    """
    n2 = lambda M: float(torch.linalg.matrix_norm(M, ord=2))  # noqa: E731
    layer = layer.requires_grad_(False)
    l1 = float(layer.ln1.gamma.abs().max()) * math.sqrt(D) + float(layer.ln1.beta.norm())
    l2 = float(layer.ln2.gamma.abs().max()) * math.sqrt(D) + float(layer.ln2.beta.norm())
    m = layer.mlp
    return layer.h * (l1 * n2(layer.attn.value_output()) + (l2 * n2(m.W1) + float(m.b1.norm())) * n2(m.W2)
                      + float(m.b2.norm()))


@settings(max_examples=4)  # each example runs 250 loops; fewer than the ci profile's 10, never more
@given(seed=st.integers(0, 1000), delta=st.floats(0.05, 2.0))
def test_looped_contractive_injection_bounded_at_any_depth(seed, delta):
    stack = make("looped", seed, arch_options={"injection": True, "injection_delta": delta})
    X = torch.randn(T, D, dtype=F64, generator=torch.Generator().manual_seed(seed))
    rho = float(stack.decay_factors().detach().max())  # spectral radius of the linear part, exp(−Δ min a) < 1
    assert rho < 1
    with torch.no_grad():  # the bound is a number: its terms need no graph
        c = _increment_bound(stack.layer)
        inj = float(stack.inj_delta) * float((X @ stack.inj_B).norm(dim=-1).max())
    # ‖x_{k+1}‖ ≤ ρ‖x_k‖ + inj + c per token, so sup_k ‖x_k‖ ≤ max(‖x_0‖, (inj + c)/(1 − ρ)).
    bound = max(float(X.norm(dim=-1).max()), (inj + c) / (1 - rho))
    with torch.no_grad():
        norms = stack.with_loops(250).trajectory(X)[..., :D].norm(dim=-1).amax(-1)
    assert float(norms.max()) <= bound * (1 + 1e-12)  # float64 rounding of the bound


@settings(max_examples=3)  # 120 loops per example; fewer than the ci profile's 10, never more
@given(seed=st.integers(0, 1000))
def test_looped_expanding_injection_diverges(seed):
    """Control: a > 0 broken (a → −a) makes exp(−Δa) > 1; ‖x_k‖ grows like ρ^k, ρ = exp(Δ max|a|)."""
    stack = make("looped", seed, arch_options={"injection": True, "injection_delta": 0.5})
    with torch.no_grad():
        stack.inj_a.neg_()
    rho = float(stack.decay_factors().detach().max())
    assert rho > 1
    X = torch.randn(T, D, dtype=F64, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        norms = stack.with_loops(120).trajectory(X)[..., :D].norm(dim=-1).amax(-1)
    k = torch.arange(60, 121, dtype=F64)
    logn = torch.log(norms[60:121])
    fit = ((k - k.mean()) * (logn - logn.mean())).sum() / ((k - k.mean()) ** 2).sum()
    # growth rate → log ρ as the top exp(−Δa) mode dominates (bounded increments are O(1/ρ^k) relative)
    assert abs(float(fit) - math.log(rho)) < 0.02 * math.log(rho)


# ------------------------------------------------------------------ mhc: Sinkhorn
@given(seed=st.integers(0, 1000), n=st.integers(2, 6), iters=st.integers(1, 30))
def test_sinkhorn_doubly_stochastic_to_stated_tolerance(seed, n, iters):
    M = torch.exp(torch.randn(n, n, dtype=F64, generator=torch.Generator().manual_seed(seed)))
    H = sinkhorn(M, iters)
    assert (H.sum(-2) - 1).abs().max() < 1e-14 * n  # columns normalised last: exact up to rounding
    # rows: linear convergence at tanh(Δ/4)² per round (Birkhoff–Hopf), bound generated from theory
    assert float((H.sum(-1) - 1).abs().max()) <= float(sinkhorn_tolerance(M, iters)) + 1e-14 * n


def test_sinkhorn_rate_is_not_slack_by_more_than_the_spectral_gap():
    """Control: the asymptotic per-round contraction is σ₂(H∞)²; a bound assuming half that rate fails."""
    M = torch.exp(torch.randn(4, 4, dtype=F64, generator=torch.Generator().manual_seed(0)))
    Hinf = sinkhorn(M, 200)
    s2 = float(torch.linalg.svdvals(Hinf)[1]) ** 2
    assert s2 <= float(gen.sinkhorn_rate(hilbert_diameter(M)))  # Birkhoff rate dominates the true one
    errs = [float((sinkhorn(M, t).sum(-1) - 1).abs().max()) for t in (10, 11)]
    assert abs(errs[1] / errs[0] - s2) < 0.05 * s2
    r1 = sinkhorn(M, 1).sum(-1)
    d1 = torch.log(r1.max() / r1.min())
    too_fast = gen.sinkhorn_marginal_bound(torch.tensor(s2 / 2, dtype=F64), d1, torch.tensor(11.0, dtype=F64))
    assert errs[1] > float(too_fast)


def test_mhc_composite_gain_bounded_vs_unconstrained():
    """Doubly stochastic H has ‖H‖₂ ≤ 1, so the composite gain stays ≤ 1 (+ Sinkhorn tolerance);
    unconstrained mixing I + M/√n (the control) grows with depth."""
    spec = StackSpec(arch="mhc", T=T, d=D, layers=32, heads=HEADS, kernel="causal", seed=2)
    ds = spec.with_(arch_options={"sinkhorn_iters": 30}).build()
    free = spec.with_(arch_options={"mixing": "unconstrained"}).build()
    with torch.no_grad():
        g_ds, g_free = ds.composite_gain(), free.composite_gain()
        tol = max(float(sinkhorn_tolerance(torch.exp(m), 30)) for m in ds.mix_logits)
    # ‖H‖₂ ≤ √(‖H‖₁‖H‖∞) ≤ √(1 + tol) per layer (column sums exact)
    assert float(g_ds.max()) <= (1 + tol) ** (32 / 2) * (1 + 1e-12)
    assert float(g_free[-1]) > 10.0


# ------------------------------------------------------------------ errors
def test_bad_arch_and_options_errors():
    with pytest.raises(ValueError, match="arch='transformer' is not one of"):
        StackSpec(T=T, d=D, layers=2, heads=HEADS, kernel="causal", arch="transformer").build()
    with pytest.raises(ValueError, match="not options of arch='mhc'"):
        StackSpec(T=T, d=D, layers=2, heads=HEADS, kernel="causal", arch="mhc", arch_options={"loops": 3}).build()
    with pytest.raises(ValueError, match="arch='preln' takes no options"):
        StackSpec(T=T, d=D, layers=2, heads=HEADS, kernel="causal", arch_options={"k": 2}).build()
    with pytest.raises(ValueError, match="injection_delta=-1.*> 0"):
        StackSpec(T=T, d=D, layers=2, heads=HEADS, kernel="causal", arch="looped", arch_options={"injection_delta": -1}).build()
    with pytest.raises(ValueError, match="compressed.*needs P"):
        StackSpec(T=T, d=D, layers=2, heads=HEADS, kernel="causal", arch="compressed").build()
    with pytest.raises(ValueError, match="mixing='free'"):
        StackSpec(T=T, d=D, layers=2, heads=HEADS, kernel="causal", arch="mhc", arch_options={"mixing": "free"}).build()
    with pytest.raises(ValueError, match="sinkhorn needs a matrix with positive entries"):
        sinkhorn(-torch.ones(2, 2, dtype=F64), 3)


# ------------------------------------------------------------------ a new architecture is one subclass
@pytest.fixture
def throwaway_arch():
    """Defines (so registers) a throwaway variant and removes it from every table afterwards."""
    from numerics.stacks import stack as S
    from numerics.stacks.architectures import ARCHITECTURES
    from numerics.stacks.architectures.preln import PreLN

    class Damped(PreLN):
        """Pre-LN whose every layer output is scaled by ``factor``: X' = factor · layer(X)."""

        arch = "throwaway-damped"
        OPTIONS = {"factor": 0.5}

        @classmethod
        def check_options(cls, options):
            S._finite(options["factor"], "factor")
            if options["factor"] <= 0:
                raise ValueError(f"factor={options['factor']} must be > 0")

        def step(self, i, s):
            return self.options["factor"] * self.base.layers[i](s)

        def token_step(self, i, sbar):
            return self.options["factor"] * self.base.layers[i].token_map(sbar)

    try:
        yield Damped
    finally:
        ARCHITECTURES.pop(Damped.arch, None)
        S.VARIANTS.pop(Damped.arch, None)


def test_a_new_architecture_is_one_subclass(throwaway_arch):
    """Defining the subclass is the whole registration: random_stack, StackSpec.build, the option
    checks and the reference trajectory see it, and its forward pass is its own (factor^L times a
    plain stack's layers, each on the damped input), not the base's."""
    from numerics.stacks.architectures import ARCHITECTURES, check_arch, resolve_options
    from numerics.stacks.spec import StackSpec

    name = throwaway_arch.arch
    assert check_arch(name) == name and ARCHITECTURES[name] is throwaway_arch
    stack = StackSpec(T=T, d=D, layers=3, heads=HEADS, kernel="causal", seed=2, arch=name, arch_options={"factor": 0.25}).build()
    plain = StackSpec(T=T, d=D, layers=3, heads=HEADS, kernel="causal", seed=2).build()
    assert isinstance(stack, throwaway_arch) and stack.config.arch == name
    x = torch.randn(T, D, generator=torch.Generator().manual_seed(5), dtype=F64)
    expected = x
    for layer in plain.layers:
        expected = 0.25 * layer(expected)
    assert float((stack(x) - expected).abs().max().detach()) <= TOL
    assert float((stack(x) - plain(x)).abs().max().detach()) > 1e-3  # the variant's own step, not the base's
    spec = StackSpec(arch=name, T=T, d=D, layers=3, heads=HEADS, kernel="causal", seed=2,
                     arch_options=(("factor", 0.25),))
    assert float((spec.build()(x) - expected).abs().max().detach()) <= TOL
    xbar = torch.randn(D, generator=torch.Generator().manual_seed(6), dtype=F64)
    ref = stack.reference_trajectory(xbar)[-1]
    assert float((stack(xbar.expand(T, D)) - ref).abs().max().detach()) <= TOL
    assert resolve_options(name, None) == {"factor": 0.5}
    with pytest.raises(ValueError, match="factor=-1 must be > 0"):
        StackSpec(T=T, d=D, layers=2, heads=HEADS, kernel="causal", arch=name, arch_options={"factor": -1}).build()
    with pytest.raises(ValueError, match=r"\['k'\] are not options of arch='throwaway-damped'"):
        StackSpec(T=T, d=D, layers=2, heads=HEADS, kernel="causal", arch=name, arch_options={"k": 2}).build()


def test_an_architecture_without_its_step_maps_cannot_be_built():
    """Control: ArchStack is abstract in step and token_step; a subclass missing them is refused
    when built, and defining one without ``arch`` registers nothing."""
    from numerics.stacks.architectures import ARCHITECTURES, ArchStack

    before = dict(ARCHITECTURES)

    class Incomplete(ArchStack):
        def step(self, i, s):
            return s

    assert ARCHITECTURES == before
    plain = StackSpec(T=T, d=D, layers=2, heads=HEADS, kernel="causal").build()
    with pytest.raises(TypeError, match="abstract method.*token_step"):
        Incomplete(plain.config, {}, plain, None, None, None)
