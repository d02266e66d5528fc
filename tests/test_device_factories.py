"""Every form runs on the device it is given: no tensor factory silently builds on the host.

Three checks, the first two without a GPU:

* **static** (AST over numerics/, numerics/generated/ and proofs_check/): every ``torch.zeros``, ``ones``,
  ``eye``, ``arange``, ``tensor``, ``full``, ``empty``, ``rand*``, ``linspace``, ... call passes ``device=``
  (``*_like`` inherit theirs).  ``device="cpu"`` is allowed where the host is meant: a seeded draw moved on
  at once (``....to(device)`` chained on the call), or a line whose comment says why (a fit of Python floats,
  a FLOP model).  :data:`PENDING` counts, per file, the calls not yet brought under the rule; a file may not
  exceed its count (a new factory without ``device=`` fails here), and a file not listed may have none.
* **fake device** (CPU): each on-stack claim's form on its first preln stack, built on the CPU, evaluated
  with the *default* device set to ``meta``; a factory without ``device=`` then builds a meta tensor, which
  :class:`DefaultDeviceWatch` records with the line that made it (and mixing it with the stack's CPU tensors
  raises).  The claims in :data:`META_PENDING` still have such a factory on their path (strict xfail: one
  that passes must leave the list).
* **cuda** (marker ``cuda``, run by benchmarks/gpu_check.sh where a GPU is present): every on-stack claim
  at toy size with ``device="cuda"``; none may end in *error*.
"""

from __future__ import annotations

import ast
import os
import traceback
from pathlib import Path

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("numerics", "proofs_check")
FACTORIES = {"zeros", "ones", "eye", "arange", "range", "tensor", "as_tensor", "full", "empty", "empty_strided",
             "rand", "randn", "randint", "randperm", "normal", "linspace", "logspace", "scalar_tensor",
             "tril_indices", "triu_indices"}

#: file -> factory calls without device= (or with device="cpu" and neither a chained .to(...) nor a reason)
#: not yet brought under the rule (178 in 55 files when this list was written); a file may not gain one.
#: numerics/stacks/stack.py: the stack's parameters are made on the host and moved by ``Stack.to(device)``
PENDING: dict[str, int] = {
    "numerics/stacks/stack.py": 16,
}

#: claims whose on-stack form still builds a tensor on the default device (fake-device check)
META_PENDING: set[str] = set()
#: claims left out of the fake-device run for its cost, with the reason; FASTSLOW_DEVICE_ALL=1 runs them too
COSTLY = {"1.1": "its dense form integrates the reference with DOP853 and Richardson depths: 5 min under load "
                 "(it passed on 2026-12-04); the static scan and the cuda test cover it"}


# ------------------------------------------------------------------------------------------- static
def _is_cpu(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value == "cpu"
    return (isinstance(node, ast.Call) and ast.unparse(node.func) in ("torch.device",) and bool(node.args)
            and isinstance(node.args[0], ast.Constant) and node.args[0].value == "cpu")


def _moved_on(call: ast.Call, parents: dict) -> bool:
    """``torch.f(...).to(...)`` (possibly after more ``.to``)."""
    parent = parents.get(call)
    return (isinstance(parent, ast.Attribute) and parent.attr == "to"
            and isinstance(parents.get(parent), ast.Call))


def _has_reason(call: ast.Call, lines: list[str]) -> bool:
    return any("#" in lines[n - 1] for n in range(call.lineno, (call.end_lineno or call.lineno) + 1))


def violations(path: Path, root: Path = ROOT) -> list[str]:
    """The factory calls in ``path`` that break the rule, as ``path:line: source``."""
    text = path.read_text()
    tree, lines = ast.parse(text, filename=str(path)), text.splitlines()
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FACTORIES
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"):
            continue
        kw = {k.arg: k.value for k in node.keywords}
        if None in kw:            # **kwargs: the caller's device travels with them
            continue
        if "device" in kw and not (_is_cpu(kw["device"]) and not _moved_on(node, parents)
                                   and not _has_reason(node, lines)):
            continue
        found.append(f"{path.relative_to(root)}:{node.lineno}: {lines[node.lineno - 1].strip()[:100]}")
    return found


def scan() -> dict[str, list[str]]:
    out = {}
    for pkg in SCANNED:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if found := violations(path):
                out[str(path.relative_to(ROOT))] = found
    return out


def test_every_factory_names_its_device():
    found = scan()
    grew = {f: v for f, v in found.items() if len(v) > PENDING.get(f, 0)}
    print(f"{sum(map(len, found.values()))} factory calls pending in {len(found)} files")
    assert not grew, ("tensor factories without device= (take it from the inputs or the spec; device='cpu' "
                      "with .to(...) or a comment saying why where the host is meant):\n"
                      + "\n".join(s for v in grew.values() for s in v))


def test_the_scan_catches_a_factory_without_device(tmp_path):
    """Negative control: the rule's cases on a made-up module."""
    src = tmp_path / "numerics" / "probe.py"
    src.parent.mkdir()
    src.write_text("import torch\n"
                   "a = torch.zeros(3)\n"                                                  # no device: caught
                   "b = torch.eye(3, dtype=x.dtype, device=x.device)\n"                    # fine
                   "c = torch.randn(3, generator=g, device='cpu')\n"                       # host, no reason: caught
                   "d = torch.randn(3, generator=g, device='cpu').to(x.device)\n"          # seeded draw moved on
                   "e = torch.tensor(v, device='cpu')  # a fit of floats\n"                # host with its reason
                   "f = torch.zeros_like(x)\n"                                             # inherits
                   "h = torch.full((2,), 1.0, **kw)\n")                                    # the caller's device
    found = violations(src, tmp_path)
    assert [s.split(":")[1] for s in found] == ["2", "4"]


# ------------------------------------------------------------------------------------- fake device
class DefaultDeviceWatch(TorchFunctionMode):
    """Records every torch call that returns a ``meta`` tensor from no meta input: a factory that took the
    default device.  ``sites`` maps ``file:line`` (the innermost frame in this repository) to its source."""

    def __init__(self):
        super().__init__()
        self.sites: dict[str, str] = {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        named = (kwargs or {}).get("device") is not None      # a device named at the call is not the default
        if isinstance(out, torch.Tensor) and out.device.type == "meta" and not named and not any(
                isinstance(t, torch.Tensor) and t.device.type == "meta" for t in tree_flatten((args, kwargs))[0]):
            frames = [f for f in traceback.extract_stack()[:-1] if _in_repository(f.filename)]
            if frames:
                f = frames[-1]
                self.sites.setdefault(f"{Path(f.filename).relative_to(ROOT)}:{f.lineno}", f.line or "")
        return out


def _in_repository(filename: str) -> bool:
    """A frame of this repository's code: under ROOT and not in an installed package (a ``.venv`` inside the
    checkout holds torch's own frames, which are not the repository's)."""
    path = Path(filename)
    return path.is_relative_to(ROOT) and not {"site-packages", "dist-packages"} & set(path.parts)


def _on_stack_claims():
    from proofs_check.verdicts import registry

    registry.load_checks()
    return registry.on_stack_claims()


def _first_spec(claim_id: str, ctx):
    from proofs_check.verdicts import registry

    return next(iter(registry.CLAIMS[claim_id].specs("preln", ctx)))


@pytest.fixture
def host_built_stacks(monkeypatch):
    """Stacks (and checkpoints) built on the CPU even while the default device is meta."""
    import numerics.stacks.spec as spec_module

    build = spec_module.build           # StackSpec.build and StackSpec.build_arch both call it

    def on_cpu(spec):
        with torch.device("cpu"):
            return build(spec)

    monkeypatch.setattr(spec_module, "build", on_cpu)


def _meta_params():
    for c in _on_stack_claims():
        if c in META_PENDING:
            yield pytest.param(c, marks=pytest.mark.xfail(strict=True, reason="a factory on the default device"))
        elif c in COSTLY and os.environ.get("FASTSLOW_DEVICE_ALL") != "1":
            yield pytest.param(c, marks=pytest.mark.skip(reason=COSTLY[c]))
        else:
            yield c


@pytest.mark.slow
@pytest.mark.parametrize("claim_id", list(_meta_params()))
def test_on_stack_form_builds_nothing_on_the_default_device(claim_id, host_built_stacks):
    from proofs_check.verdicts.evidence import CheckContext
    from proofs_check.verdicts import registry

    ctx = CheckContext(device="cpu", quick=True, seed=0)
    spec = _first_spec(claim_id, ctx)
    watch = DefaultDeviceWatch()
    with torch.device("meta"), watch:
        verdict = registry.CLAIMS[claim_id].evaluate(spec, ctx)
    assert not watch.sites, "factories on the default device:\n" + "\n".join(f"{k}: {v}" for k, v in watch.sites.items())
    assert verdict.status != "error", verdict.reason


def test_the_watch_sees_a_factory_on_the_default_device():
    """Negative control: a factory without device= under the meta default is recorded with its line."""
    watch = DefaultDeviceWatch()
    x = torch.ones(3, dtype=torch.float64)
    with torch.device("meta"), watch:
        y = torch.zeros(3, dtype=x.dtype)               # no device: meta (the site recorded)
        z = torch.zeros(3, dtype=x.dtype, device=x.device)
    assert y.device.type == "meta" and z.device.type == "cpu"
    assert list(watch.sites) == [f"tests/test_device_factories.py:{_line_of('y = torch.zeros(3, dtype=x.dtype)  ')}"]
    from numerics.fitting import loglog_fit

    with torch.device("meta"), watch:
        loglog_fit([1.0, 2.0], [1.0, 4.0])              # its CPU floats say device='cpu': nothing recorded
    assert not any("fitting.py" in k for k in watch.sites)


def _line_of(text: str) -> int:
    return next(i for i, line in enumerate(Path(__file__).read_text().splitlines(), 1) if text in line)


# -------------------------------------------------------------------------------------------- cuda
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("claim_id", _on_stack_claims())
def test_on_stack_form_runs_on_cuda(claim_id):
    from proofs_check.verdicts.evidence import CheckContext
    from proofs_check.verdicts import registry

    ctx = CheckContext(device="cuda", quick=True, seed=0)
    spec = _first_spec(claim_id, ctx).with_(device="cuda")
    verdict = registry.CLAIMS[claim_id].evaluate(spec, ctx)
    assert verdict.status != "error", verdict.reason
