"""What an architecture has, as data: each :class:`~numerics.stacks.architectures.base.ArchStack` subclass
declares its ``CAPABILITIES`` (names from :data:`CAPABILITIES`) in its own class body, and a claim
declares what it needs (``needs=`` on its ``@on_stack`` registration,
``proofs_check.verdicts.registry``).  The registry decides "not applicable" from these two sets
alone; a claim that measures differently where a capability is present asks :func:`has`.

A capability is declared, never inherited: a subclass that reuses a parent's modules (ReLU over
pre-LN) states its own set, so that adding a subclass never grants it a derivation made for its
parent.
"""

from __future__ import annotations

#: capability -> what an architecture that has it offers
CAPABILITIES: dict[str, str] = {
    "paper_stack": "the paper's pre-LN stack (docs/theory.md §0), whose claims are derived and generated in "
                   "closed form",
    "kink_set": "a map that is smooth only off a Lebesgue-null kink set, with its distance to it (kink_distance)",
    "post_norm": "LayerNorm after the residual add, whose LN gains and biases can be fixed to γ = 1, β = 0",
    "compressed_branch": "attention over block-compressed keys and values, scaled by compress_gate",
    "mode_block_formula": "a generated formula for its per-layer mode blocks (MODE_BLOCK_FORMULA, theory.architectures)",
}


def capabilities(arch: str) -> frozenset[str]:
    """The capabilities architecture ``arch`` declares (ValueError for an unknown architecture or an
    undeclared capability name in its class)."""
    from numerics.stacks.architectures.base import ARCHITECTURES, check_arch

    cls = ARCHITECTURES[check_arch(arch)]
    declared = frozenset(vars(cls).get("CAPABILITIES", ()))
    unknown = sorted(declared - set(CAPABILITIES))
    if unknown:
        raise ValueError(f"arch={arch!r} declares capabilities {unknown} that are not in "
                         f"numerics.stacks.architectures.capabilities.CAPABILITIES ({', '.join(CAPABILITIES)})")
    return declared


def has(arch: str, capability: str) -> bool:
    """Whether architecture ``arch`` declares ``capability`` (ValueError for an unknown name of either)."""
    if capability not in CAPABILITIES:
        raise ValueError(f"capability={capability!r} is not one of {', '.join(CAPABILITIES)}")
    return capability in capabilities(arch)


def missing(arch: str, needs) -> str | None:
    """The first of ``needs`` that ``arch`` lacks, or None when it has them all."""
    return next((need for need in needs if not has(arch, need)), None)
