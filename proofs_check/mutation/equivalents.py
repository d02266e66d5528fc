"""Why a surviving code mutant is not a missing test: the rules behind docs/equivalent_mutants.md.

A mutmut survivor is either killed by a new test or justified here.  A rule matches the
mutated line (``old``) and its mutant (``new``) textually and states why no input tells them
apart (*equivalent*), or why none can on a machine with the CPU as its only device
(*device-only*: the CUDA test in tests/test_stack_contract.py kills them where a GPU exists;
the kernel constructors are held to their ``device`` argument on ``meta`` tensors, which
``torch.linalg.lstsq`` and the stack's module moves cannot use).  Everything else is *open*.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from proofs_check.tables import bold, code as code_span, markdown_table


@dataclass(frozen=True)
class Rule:
    key: str
    kind: str  # "equivalent" | "device-only"
    why: str
    applies: Callable[[str, str, str], bool]  # (mutant name, old line, new line)


def _argument_end(text: str, start: int) -> int:
    """Index just past the argument value starting at ``start`` (up to a comma or closing
    bracket at bracket depth 0)."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            if depth == 0:
                return i
            depth -= 1
        elif text[i] == "," and depth == 0:
            return i
    return len(text)


def _device_dropped(_name: str, old: str, new: str) -> bool:
    """``new`` is ``old`` with one ``device=...`` argument set to None or removed."""
    squeeze = lambda t: re.sub(r"\s+", "", t)  # noqa: E731
    for match in re.finditer(r"device=", old):
        start, end = match.start(), _argument_end(old, match.end())
        for replacement in ("device=None", ""):
            if squeeze(old[:start] + replacement + old[end:]) == squeeze(new):
                return True
    return False


def _default_dropped(old: str, new: str) -> bool:
    if ", dim=0)" in old and new in (old.replace(", dim=0)", ", )"), old.replace(", dim=0)", ")")):
        return True
    return ', "P")' in old and new == old.replace(', "P")', ", )")


def _integer_constant_dtype(_name: str, old: str, new: str) -> bool:
    match = re.search(r"torch\.tensor\((-?\d+), dtype=[\w.]+, ", old)
    return bool(match) and new in (old.replace(match.group(0), f"torch.tensor({match.group(1)}, dtype=None, "),
                                   old.replace(match.group(0), f"torch.tensor({match.group(1)}, "))


RULES: tuple[Rule, ...] = (
    Rule("E1", "equivalent", "einsum subscripts renamed consistently (upper case): einsum is invariant under "
         "a consistent renaming of its index letters",
         lambda _n, old, new: "einsum(" in old and old != new and old.lower() == new.lower()),
    Rule("E2", "equivalent", "an integer literal constant made without dtype: torch.tensor(int) is int64 and "
         "torch.stack/broadcasting promote it to the floating dtype of the other operand; 0, ±1 are exact",
         _integer_constant_dtype),
    Rule("E3", "equivalent", "x / ones = x * ones exactly (division by 1.0 is exact in IEEE arithmetic)",
         lambda _n, old, new: "* torch.ones(" in old and old.replace("* torch.ones(", "/ torch.ones(") == new),
    Rule("E4", "equivalent", "ones(d) broadcasts against the (d, d) identity to the same all-ones matrix",
         lambda _n, old, new: "torch.ones(d, d," in old and old.replace("torch.ones(d, d,", "torch.ones(d,") == new),
    Rule("E5", "equivalent", "in G_layer_coefficient_1 x0 enters as x0·x11 + x11(−x0·I + …) = x11(…): it cancels "
         "algebraically (the generated expression is unsimplified), so changing x0 changes the result by "
         "rounding only (~1e-16 relative)",
         lambda name, old, _new: "G_layer_coefficient_1" in name and old.startswith("x0 = alpha*h - 1")),
    Rule("E6", "equivalent", "flatten(-2) drops end_dim, whose default is -1: the same call",
         lambda _n, old, new: ".flatten(-2, -1)" in old and new in (old.replace(".flatten(-2, -1)", ".flatten(-2, )"),
                                                                     old.replace(".flatten(-2, -1)", ".flatten(-2)"))),
    Rule("E7", "equivalent", "an argument equal to its default dropped (torch.cat's dim=0; check_divisible's "
         "name='P')", lambda _n, old, new: _default_dropped(old, new)),
    Rule("E8", "equivalent", "str.rsplit('.', k)[-1] is the last dotted component for every k ≥ 1 and for no k",
         lambda _n, old, new: 'rsplit(".", 1)[-1]' in old and new in (old.replace('rsplit(".", 1)', 'rsplit(".", )'),
                                                                        old.replace('rsplit(".", 1)', 'rsplit(".", 2)'))),
    Rule("E9", "equivalent", "the smooth path's draws all come from one layer, so draws[0] and draws[1] have the "
         "same parameter names",
         lambda _n, old, new: "for name in draws[0]" in old and new == old.replace("draws[0]", "draws[1]")),
    Rule("E10", "equivalent", "the least-squares right-hand side given a second, identical column: lstsq "
         "solves each column on its own and only the first is read",
         lambda _n, old, new: "zeros_like(M[:, :1])" in old and new == old.replace("M[:, :1]", "M[:, :2]")),
    Rule("D", "device-only", "a device argument set to None or dropped: the same tensor on a machine whose "
         "only device is the CPU; a second device (CUDA) tells them apart", _device_dropped),
)


def classify(survivor: dict) -> Rule | None:
    """The first rule that justifies ``survivor`` (a ``run_code_mutants`` survivor), else None."""
    old, _, new = survivor["mutation"].partition("  ->  ")
    return next((r for r in RULES if r.applies(survivor["mutant"], old, new)), None)


def annotate(code: dict) -> dict:
    """``code`` with each survivor's ``justified`` rule key (or None) and the counts by kind."""
    counts = {"equivalent": 0, "device-only": 0, "open": 0}
    for s in code["survivors"]:
        rule = classify(s)
        s["justified"] = rule.key if rule else None
        counts[rule.kind if rule else "open"] += 1
    code["justified"] = counts
    return code


def markdown(code: dict, command: str) -> str:
    """docs/equivalent_mutants.md for a ``run_code_mutants`` result that ``annotate`` has seen."""
    kinds = {r.key: r.kind for r in RULES}
    by_file = {path: {"total": total, "killed": killed, "equivalent": 0, "device-only": 0, "open": 0}
               for path, (total, killed) in code["by_file"].items()}
    for s in code["survivors"]:
        by_file[s["file"]][kinds.get(s["justified"], "open")] += 1
    lines = ["# Surviving code mutants", "",
             f"`{command}` (mutmut {code.get('version', '')}) over {', '.join(f'`{p}`' for p in code['paths'])} "
             f"with {', '.join(f'`{t}`' for t in code['tests'])}: **{code['killed']}/{code['total']} = "
             f"{code['score']:.4f}** killed.", ""]
    lines += markdown_table(("file", "mutants", "killed", "score", "equivalent", "device-only", "open"),
                            [(code_span(path), row["total"], row["killed"],
                              f"{row['killed'] / row['total'] if row['total'] else float('nan'):.4f}",
                              row["equivalent"], row["device-only"], row["open"])
                             for path, row in sorted(by_file.items())])
    lines += ["", "Every survivor is killed by a new test or justified by one of these rules "
              "(`proofs_check/mutation/equivalents.py`, which `fastslow mutate` applies):", ""]
    lines += [f"- **{r.key}** ({r.kind}): {r.why}." for r in RULES]
    lines += [""] + markdown_table(("file", "line", "mutation", "rule"),
                                   [(s["file"], s["line"], code_span(s["mutation"][:160]),
                                     s["justified"] or bold("open")) for s in code["survivors"]])
    return "\n".join(lines) + "\n"
