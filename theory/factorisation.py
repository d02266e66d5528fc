"""Claims 2.1–2.4: factorisation of the linearised stack along the frozen kernel (docs/theory.md §2).

Conventions: tokens are rows, X ∈ R^{T×d}; vec is row-major, vec(A E B) = (A ⊗ Bᵀ) vec(E).
A single token is a column vector x ∈ R^d.  ``W_VO`` is the row-convention matrix that
``Attention.value_output()`` returns (token output = LN₁(x)ᵀ W_VO), so in column form
the attention value map is W_VOᵀ.

Claim 2.1.  At the token-homogeneous reference X_ℓ = 1x̄_ℓᵀ the softmax Jacobian rows
sum to zero and all value rows are equal, so the attention-weight perturbation drops
out and layer ℓ linearises to

    E ↦ (1 − hα) E + h A E B_ℓᵀ   then   ↦ (·)(I + C_ℓ)ᵀ,
    B_ℓ = W_VOᵀ J_LN₁(x̄_ℓ),   C_ℓ = h J_MLP(LN₂(ū_ℓ)) J_LN₂(ū_ℓ),
    ū_ℓ = (1 − hα) x̄_ℓ + h W_VOᵀ LN₁(x̄_ℓ),

so in the basis S ⊗ I_d (A = SΛS⁻¹) every layer is block diagonal with blocks
G_ℓ(λ) = (I + C_ℓ)((1 − hα) I + hλ B_ℓ).  J_LN(z) = diag(γ)/σ (I − 11ᵀ/d − x̂x̂ᵀ/d),
x̂ = (z − mean z)/σ, σ = √(var z + eps); GELU′ comes from differentiating x Φ(x).
Assumptions: gate 0 (or no slow path); one frozen kernel shared by every head and layer.

Claim 2.2.  The three conditions — homogeneous reference, token-wise LN/MLP, commuting
kernels — each leave a residual that vanishes at zero violation and is linear in it
(``prove_residuals_linear``).

Claim 2.3.  G_ℓ(λ) is affine in λ, so G(λ) = Σ_m λ^m K_m and J = Σ_m A^m ⊗ K_m with no
eigenvectors.  The causal kernel's eigenbasis is the Pascal matrix S_ik = C(i, k)
(0-based), exact in rationals, with cond S growing like 4^T.

Claim 2.4.  At the reference the scores are constant along rows, softmax(q + b) =
softmax(b), so A, x̄_ℓ and G(λ) do not depend on W_Q, W_K (they are not even arguments
of the derived expressions).

The symbolic proofs of these statements are ``theory/factorisation_proofs.py``.
"""

from __future__ import annotations

import sympy as sp
from sympy import (DiagMatrix, Identity, Lambda, MatrixSymbol, OneMatrix, Symbol, Trace, sqrt)

FAMILY = "factorisation"

# ---- symbols ---------------------------------------------------------------------------
d = Symbol("d", integer=True, positive=True)        # feature width
m = Symbol("m", integer=True, positive=True)        # MLP width
h = Symbol("h", positive=True)                      # depth step 1/L
alpha = Symbol("alpha", nonnegative=True)           # decay α
lam = Symbol("lam")                                 # eigenvalue λ of the frozen kernel
eps = Symbol("eps", positive=True)                  # LN eps
y = Symbol("y", real=True)                          # elementwise variable


class LayerSymbols:
    """The per-layer MatrixSymbols at feature width ``dim`` and MLP width ``width``
    (symbolic d, m for code generation; integers for explicit checks)."""

    def __init__(self, dim=d, width=m, activation="gelu"):
        self.d, self.m = dim, width
        self.activation = activation                  # the MLP's: "gelu" (exact) or "gelu_new" (tanh)
        self.x = MatrixSymbol("x", dim, 1)            # reference token x̄_ℓ
        self.u = MatrixSymbol("u", dim, 1)            # ū_ℓ (after the attention sublayer)
        self.z = MatrixSymbol("z", dim, 1)            # generic LN input
        self.gamma = MatrixSymbol("gamma", dim, 1)
        self.gamma1 = MatrixSymbol("gamma1", dim, 1)
        self.beta1 = MatrixSymbol("beta1", dim, 1)
        self.W_VO = MatrixSymbol("W_VO", dim, dim)    # row convention, Σ_heads W_V W_O
        self.gamma2 = MatrixSymbol("gamma2", dim, 1)
        self.beta2 = MatrixSymbol("beta2", dim, 1)
        self.W1 = MatrixSymbol("W1", dim, width)
        self.b1 = MatrixSymbol("b1", width, 1)
        self.W2 = MatrixSymbol("W2", width, dim)
        self.b_O = MatrixSymbol("b_O", dim, 1)        # attention output bias (b_V folded in)
        self.I = Identity(dim)
        self.centre = self.I - OneMatrix(dim, dim) / dim   # I − 11ᵀ/d


SYM = LayerSymbols()
#: GPT-2's layer: the same symbols, the MLP with gelu_new.
SYM_TANH = LayerSymbols(activation="gelu_new")


# ---- building blocks -------------------------------------------------------------------
def gelu_scalar(t):
    """Exact GELU, t Φ(t)."""
    return t / 2 * (1 + sp.erf(t / sqrt(2)))


def gelu_prime_scalar(t):
    """GELU′ by differentiation (not typed by hand)."""
    return sp.diff(gelu_scalar(y), y).subs(y, t)


#: GPT-2's ``gelu_new`` constant of the cubic term.
GELU_TANH_CUBIC = sp.Rational(44715, 1000000)


def gelu_tanh_scalar(t):
    """GPT-2's ``gelu_new``: t/2 (1 + tanh(√(2/π)(t + 0.044715 t³))), the tanh form of GELU."""
    return t / 2 * (1 + sp.tanh(sqrt(2 / sp.pi) * (t + GELU_TANH_CUBIC * t**3)))


def gelu_tanh_prime_scalar(t):
    """gelu_new′ by differentiation (not typed by hand)."""
    return sp.diff(gelu_tanh_scalar(y), y).subs(y, t)


#: activation name (``numerics.stacks.stack.ACTIVATIONS``) -> its derivative, for the MLP Jacobian.
ACTIVATION_PRIMES = {"gelu": lambda t: gelu_prime_scalar(t), "gelu_new": lambda t: gelu_tanh_prime_scalar(t)}


def ln_sigma(v, s=SYM):
    """σ = √(var v + eps), biased variance, as a scalar: var = tr(c cᵀ)/d, c = v − mean v."""
    c = s.centre * v
    return sqrt(Trace(c * c.T) / s.d + eps)


def ln_normalised(v, s=SYM):
    """x̂ = (v − mean v)/σ (column)."""
    return s.centre * v / ln_sigma(v, s)


def layer_norm_expr(v, g, b, s=SYM):
    """LN(v) = γ ⊙ x̂ + β, written as diag(γ) x̂ + β (column)."""
    return DiagMatrix(g) * ln_normalised(v, s) + b


def ln_jacobian_expr(v, g, s=SYM):
    """J_LN(v) = diag(γ)/σ (I − 11ᵀ/d − x̂x̂ᵀ/d)."""
    xh = ln_normalised(v, s)
    return DiagMatrix(g) * (s.centre - xh * xh.T / s.d) / ln_sigma(v, s)


def mlp_jacobian_expr(v, s=SYM):
    """J_MLP(v) = W₂ᵀ diag(σ′(W₁ᵀ v + b₁)) W₁ᵀ (column form of z W₁ + b₁ → σ → W₂), σ the
    exact GELU or GPT-2's tanh form (``s.activation``: a key of ACTIVATION_PRIMES)."""
    prime = ACTIVATION_PRIMES[s.activation]
    pre = s.W1.T * v + s.b1
    if isinstance(s.d, int):  # explicit sizes (checks): SymPy cannot keep the elementwise node
        slope = sp.Matrix(pre.as_explicit()).applyfunc(prime)
        return s.W2.T * sp.diag(*slope) * s.W1.T
    return s.W2.T * DiagMatrix(pre.applyfunc(Lambda(y, prime(y)))) * s.W1.T


def ubar_expr(s=SYM):
    """ū = (1 − hα) x̄ + h (W_VOᵀ LN₁(x̄) + b_O): the reference after the attention sublayer, with
    the attention output bias b_O (zero for the paper's stack; GPT-2's c_proj bias with b_V folded
    in: softmax rows sum to 1, so A 1 b_Vᵀ = 1 b_Vᵀ).  b_O is constant over tokens, so it moves the
    reference and not the Jacobian's form."""
    return (1 - h * alpha) * s.x + h * (s.W_VO.T * layer_norm_expr(s.x, s.gamma1, s.beta1, s) + s.b_O)


def B_expr(s=SYM):
    """B_ℓ = W_VOᵀ J_LN₁(x̄_ℓ)."""
    return s.W_VO.T * ln_jacobian_expr(s.x, s.gamma1, s)


def C_expr(s=SYM):
    """C_ℓ = h J_MLP(LN₂(ū)) J_LN₂(ū), with ū = ``ubar_expr`` passed in as the argument u."""
    u = s.u
    return h * mlp_jacobian_expr(layer_norm_expr(u, s.gamma2, s.beta2, s), s) * ln_jacobian_expr(u, s.gamma2, s)


def G_expr(lam_value=lam, s=SYM):
    """G_ℓ(λ) = (I + C_ℓ)((1 − hα) I + hλ B_ℓ)."""
    return (s.I + C_expr(s)) * ((1 - h * alpha) * s.I + h * lam_value * B_expr(s))


S_ = SYM
LAYER_ARGS = (S_.x, S_.u, S_.gamma1, S_.W_VO, S_.gamma2, S_.beta2, S_.W1, S_.b1, S_.W2, h, alpha, eps)
#: Representative sizes for ordering matrix chains in the generated code: the MLP is 4d wide.
MLP_SIZES = {S_.d: 64, S_.m: 256}


def generated_functions():
    from theory.codegen import GenFunction

    s = SYM
    return [
        GenFunction("ln_jacobian", (s.z, s.gamma, eps), ln_jacobian_expr(s.z, s.gamma), claim="2.1",
                    doc="J_LN(z) = diag(γ)/σ (I − 11ᵀ/d − x̂x̂ᵀ/d), σ = √(var z + eps)."),
        GenFunction("ubar", (s.x, s.gamma1, s.beta1, s.W_VO, s.b_O, h, alpha, eps), ubar_expr(), claim="2.1",
                    doc="ū = (1 − hα) x̄ + h (W_VOᵀ LN₁(x̄) + b_O): reference token after attention "
                        "(b_O the attention output bias, zero without one)."),
        GenFunction("B_layer", (s.x, s.gamma1, s.W_VO, eps), B_expr(), claim="2.1",
                    doc="B_ℓ = W_VOᵀ J_LN₁(x̄_ℓ) (column form)."),
        GenFunction("C_layer", (s.u, s.gamma2, s.beta2, s.W1, s.b1, s.W2, h, eps), C_expr(), claim="2.1",
                    doc="C_ℓ = h J_MLP(LN₂(ū_ℓ)) J_LN₂(ū_ℓ); pass u = ubar(x̄_ℓ, ...).", sizes=MLP_SIZES),
        GenFunction("G_layer", LAYER_ARGS + (lam,), G_expr(), claim="2.1",
                    doc="G_ℓ(λ) = (I + C_ℓ)((1 − hα) I + hλ B_ℓ): layer ℓ's block on mode λ; u = ū_ℓ.", sizes=MLP_SIZES),
        GenFunction("G_layer_coefficient_0", LAYER_ARGS, G_expr(0), claim="2.3",
                    doc="G_ℓ(0) = (1 − hα)(I + C_ℓ): constant coefficient of the affine G_ℓ(λ).", sizes=MLP_SIZES),
        GenFunction("G_layer_coefficient_1", LAYER_ARGS, G_expr(1) - G_expr(0), claim="2.3",
                    doc="G_ℓ(1) − G_ℓ(0) = h (I + C_ℓ) B_ℓ: λ-coefficient of the affine G_ℓ(λ).", sizes=MLP_SIZES),
        GenFunction("gelu_tanh", (y,), gelu_tanh_scalar(y), claim="2.1",
                    doc="GPT-2's gelu_new: y/2 (1 + tanh(√(2/π)(y + 0.044715 y³))), elementwise."),
        GenFunction("gelu_tanh_prime", (y,), gelu_tanh_prime_scalar(y), claim="2.1",
                    doc="gelu_new′ by differentiating gelu_tanh, elementwise."),
        GenFunction("C_layer_gelu_tanh", (s.u, s.gamma2, s.beta2, s.W1, s.b1, s.W2, h, eps),
                    C_expr(SYM_TANH), claim="2.1",
                    doc="C_ℓ = h J_MLP(LN₂(ū_ℓ)) J_LN₂(ū_ℓ) for an MLP with gelu_new.", sizes=MLP_SIZES),
        GenFunction("G_layer_gelu_tanh", LAYER_ARGS + (lam,), G_expr(lam, SYM_TANH), claim="2.1",
                    doc="G_ℓ(λ) = (I + C_ℓ)((1 − hα) I + hλ B_ℓ) for an MLP with gelu_new.", sizes=MLP_SIZES),
        GenFunction("G_layer_coefficient_0_gelu_tanh", LAYER_ARGS, G_expr(0, SYM_TANH), claim="2.3",
                    doc="G_ℓ(0) = (1 − hα)(I + C_ℓ) for an MLP with gelu_new.", sizes=MLP_SIZES),
        GenFunction("G_layer_coefficient_1_gelu_tanh", LAYER_ARGS,
                    G_expr(1, SYM_TANH) - G_expr(0, SYM_TANH), claim="2.3",
                    doc="G_ℓ(1) − G_ℓ(0) = h (I + C_ℓ) B_ℓ for an MLP with gelu_new.", sizes=MLP_SIZES),
    ]
