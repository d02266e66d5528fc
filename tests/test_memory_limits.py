"""The memory refusal sees the machine's real limits, not only the host's free memory.

``numerics.stacks.memory.memory_limits`` takes the least of the host's available memory, what the
cgroup limit leaves (v2 and v1, the process's cgroup and its ancestors, net of reclaimable page
cache), what RLIMIT_AS and RLIMIT_DATA leave, and a CUDA device's free memory.  The cgroup files
are faked in a temporary tree; the rlimit is set for real on a child process (``prlimit`` and
``resource.setrlimit``), where the old check (psutil alone) let the run start and die.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from numerics.stacks import memory
ROOT = Path(__file__).resolve().parents[1]
GiB = 2**30


def _fake_cgroup(tmp_path, monkeypatch, proc: str, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = tmp_path / "sys" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "proc_cgroup").write_text(proc)
    monkeypatch.setattr(memory, "CGROUP_ROOT", tmp_path / "sys")
    monkeypatch.setattr(memory, "PROC_CGROUP", tmp_path / "proc_cgroup")


def test_cgroup_v2_limit_net_of_page_cache_binds(tmp_path, monkeypatch):
    _fake_cgroup(tmp_path, monkeypatch, "0::/job/task\n", {
        "cgroup.controllers": "memory\n",
        "job/memory.max": str(3 * GiB),           # the container's limit, on the parent
        "job/memory.current": str(1 * GiB),
        "job/memory.stat": f"anon 1\ninactive_file {GiB // 2}\n",
        "job/task/memory.max": "max",             # no limit of its own
        "job/task/memory.current": str(GiB)})
    left, source = memory.cgroup_headroom()
    assert left == 3 * GiB - (GiB - GiB // 2)  # limit − (usage − reclaimable cache)
    assert source.endswith("job/memory.max")
    assert memory.available_bytes() <= left
    with pytest.raises(ValueError, match=r"cgroup memory limit .*job/memory\.max"):
        memory.check_fits(6 * GiB, what="simulate with T=16384")


def test_cgroup_v1_limit_and_its_no_limit_value(tmp_path, monkeypatch):
    _fake_cgroup(tmp_path, monkeypatch, "4:memory:/docker/abc\n1:cpu:/\n", {
        "memory/docker/abc/memory.limit_in_bytes": str(2 * GiB),
        "memory/docker/abc/memory.usage_in_bytes": str(GiB),
        "memory/docker/abc/memory.stat": "total_inactive_file 0\n",
        "memory/docker/memory.limit_in_bytes": "9223372036854771712",  # the kernel's "unlimited"
        "memory/memory.limit_in_bytes": "9223372036854771712"})
    assert memory.cgroup_headroom() == (GiB, str(tmp_path / "sys/memory/docker/abc/memory.limit_in_bytes"))


def test_no_cgroup_files_and_junk_read_as_no_limit(tmp_path, monkeypatch):
    _fake_cgroup(tmp_path, monkeypatch, "garbage\n0::/x\n", {"cgroup.controllers": "", "x/memory.max": "lots"})
    assert memory.cgroup_headroom() is None
    monkeypatch.setattr(memory, "PROC_CGROUP", tmp_path / "missing")
    assert memory.cgroup_headroom() is None


SIMULATE = [sys.executable, "-m", "proofs_check.cli", "simulate", "--T", "16384", "--P", "0", "--d", "8",
            "--layers", "1", "--heads", "1", "--no-progress"]


def _limit_address_space(limit: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def test_rlimit_as_refuses_before_any_work():
    """Under a 3 GB address-space limit the 6 GiB run is refused with exit 2 naming RLIMIT_AS,
    where the old check (host memory only) started it and died with a traceback."""
    out = subprocess.run(SIMULATE, cwd=ROOT, capture_output=True, text=True, timeout=300,
                         preexec_fn=_limit_address_space(3 * 10**9), env={**os.environ, "MPLBACKEND": "Agg"})
    assert out.returncode == 2, out.stderr[-2000:]
    assert "RLIMIT_AS" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs util-linux prlimit")
def test_prlimit_names_the_limit_and_the_estimate():
    out = subprocess.run(["prlimit", "--as=3000000000", *SIMULATE], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "MPLBACKEND": "Agg"})
    assert out.returncode == 2, out.stderr[-2000:]
    last = out.stderr.strip().splitlines()[-1]
    assert "6.02 GiB" in last and "RLIMIT_AS" in last


def test_rlimit_headroom_in_process_is_limit_less_current_address_space():
    """In this process: with RLIMIT_AS set to the current address space + 1 GiB, the headroom is
    ≈ 1 GiB (within the growth of the address space between the two reads, 64 MiB)."""
    import psutil

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    vms = psutil.Process().memory_info().vms
    target = vms + GiB
    if hard != resource.RLIM_INFINITY and hard < target:
        pytest.skip("hard RLIMIT_AS below the test's limit")
    resource.setrlimit(resource.RLIMIT_AS, (target, hard))
    try:
        limits = dict((source.split(" ")[0], left) for left, source in memory.memory_limits())
        assert abs(limits["RLIMIT_AS"] - GiB) < 64 * 2**20
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def test_a_local_sweep_cluster_is_sized_against_the_cgroup_limit(tmp_path, monkeypatch):
    """4 workers measured 2.3 GB together; under a 2 GiB cgroup limit 4 are refused (naming --workers
    and the limit) and 1 is accepted; workers beyond 4 per core are refused outright."""
    from proofs_check.sweep import spec as sweep_spec
    from proofs_check.sweep.grid import expand
    from proofs_check.sweep.run import WORKERS_PER_CORE, check_resources, default_workers

    _fake_cgroup(tmp_path, monkeypatch, "0::/job\n", {"cgroup.controllers": "memory\n",
                                                       "job/memory.max": str(2 * GiB), "job/memory.current": "0"})
    tasks = expand(sweep_spec.load("coarse_graining"))
    with pytest.raises(ValueError, match=r"--workers=4 local workers .* cgroup memory limit .*give fewer --workers"):
        check_resources(tasks, 4)
    check_resources(tasks, 1)
    too_many = WORKERS_PER_CORE * default_workers() + 1
    with pytest.raises(ValueError, match=rf"--workers={too_many}: more than"):
        check_resources(tasks, too_many)


def test_training_is_sized_with_its_batch_not_only_its_stack(tmp_path, monkeypatch):
    """``train`` used to estimate building the stack only; a batch that needs 3.4 GB (measured 3.55 GB)
    is refused under a 2 GiB cgroup limit, naming --batch; a small batch is accepted, and two 7.3 runs in
    parallel are sized together."""
    from proofs_check.experiments.train import TextConfig, check_training_fits

    _fake_cgroup(tmp_path, monkeypatch, "0::/job\n", {"cgroup.controllers": "memory\n",
                                                       "job/memory.max": str(2 * GiB), "job/memory.current": "0"})
    big = TextConfig(batch=20000, T=16, d=32, layers=2, heads=2)
    with pytest.raises(ValueError, match=r"training with --batch=20000 --T=16 .* cgroup memory limit"):
        check_training_fits(big)
    half = TextConfig(batch=10000, T=16, d=32, layers=2, heads=2)
    check_training_fits(half)
    with pytest.raises(ValueError, match=r"in 2 processes .* or --workers"):
        check_training_fits(half, copies=2)
