"""``fastslow check --profile random``: the checks draw their stacks from a fresh seed, the ledger
records it, and ``--seed N`` reproduces that run; ``ci`` keeps seed 0."""

from proofs_check.runners.check import check_seed, format_table, run_checks


def test_random_profile_draws_a_fresh_seed_and_an_explicit_seed_wins():
    assert check_seed("ci", None) == 0 and check_seed("thorough", None) == 0
    assert len({check_seed("random", None) for _ in range(4)}) > 1  # 4 draws of 2^31: distinct w.p. 1 − 3e-9
    assert check_seed("random", 12) == 12


def test_the_ledger_records_the_seed_and_the_seed_reaches_the_checks():
    runs = [run_checks(["5.2"], profile="random", seed=s, progress=False) for s in (5, 5, 6)]
    assert runs[0]["options"]["seed"] == 5 and "--seed 5" in runs[0]["options"]["reproduce"]
    assert "reproduce with --profile random --seed 5" in format_table(runs[0])
    errors = [r["claims"][0]["numeric"]["max_error"] for r in runs]
    assert errors[0] == errors[1]  # the same seed draws the same systems
    assert errors[0] != errors[2]  # another seed draws other systems
