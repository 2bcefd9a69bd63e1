"""The scan's flags in every verdict with a patch, and the outside-write watch of the runner (docs/security.md)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import SimpleNamespace

from verify_task import GOLD

from agentbon.config import VerifyConfig
from agentbon.verify import TestVerifier
from agentbon.verify.runner import outside_write_flag, verifiers_dir

EXIT_IN_HELPER = GOLD["calc/ops.py"] + "\n\ndef _quit():\n    import os\n    os._exit(0)\n"


def supervise_module():
    spec = importlib.util.spec_from_file_location("agentbon_supervise", verifiers_dir() / "agentbon_supervise.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def verify(backend, calc, patch, role="grade", config=None):
    verifier = TestVerifier(backend, config or VerifyConfig(timeout_s=60, dedupe=False))
    return verifier.verify(calc.task, calc.rollout(patch), role)


def test_flags_ride_on_a_passing_verdict(calc, backend):
    verdict = verify(backend, calc, calc.patch({"calc/ops.py": EXIT_IN_HELPER}))
    assert verdict.status == "pass"  # a flag is never a verdict by itself
    assert verdict.flag_kinds == ["suspicious_code"]
    assert verdict.flags[0].paths == ["calc/ops.py"] and "process exit" in verdict.flags[0].detail


def test_gold_patch_carries_no_flag(calc, backend):
    verdict = verify(backend, calc, calc.task.gold_patch)
    assert verdict.status == "pass" and verdict.flags == []


def test_flags_without_a_run(calc, fake_backend):
    # A patch that does not apply is still scanned; so is one whose verdict is shared with an identical patch.
    broken = calc.patch({"calc/ops.py": EXIT_IN_HELPER}).replace("-    return a - b", "-    return a ^ b")
    verdict = verify(fake_backend, calc, broken)
    assert not verdict.patch_applied and verdict.flag_kinds == ["suspicious_code"]
    verifier = TestVerifier(fake_backend, VerifyConfig(timeout_s=60))
    patch = calc.patch({"calc/ops.py": EXIT_IN_HELPER})
    first, second = (verifier.verify(calc.task, calc.rollout(patch), "grade") for _ in range(2))
    assert first.flags == second.flags and second.flag_kinds == ["suspicious_code"]


def test_size_limit_comes_from_the_config(calc, fake_backend):
    patch = calc.patch({**GOLD, "calc/table.txt": "row\n" * 100})
    assert verify(fake_backend, calc, patch).flags == []
    limited = VerifyConfig(timeout_s=60, dedupe=False, max_file_bytes=100)
    assert verify(fake_backend, calc, patch, config=limited).flag_kinds == ["large_file"]


def test_outside_write_flag_from_the_runner_report():
    assert outside_write_flag({}) is None and outside_write_flag({"outside_changes": []}) is None
    paths = [f"/usr/lib/python3/dist-packages/x{i}.pth" for i in range(5)]
    flag = outside_write_flag({"outside_changes": paths, "outside_changes_total": 7})
    assert flag and flag.kind == "outside_write" and flag.paths == paths
    assert "7 path(s)" in flag.detail and "and 4 more" in flag.detail


def test_fingerprint_sees_new_changed_and_removed_files(tmp_path: Path):
    sup = supervise_module()
    site, repo = tmp_path / "site", tmp_path / "repo"
    (site / "pkg").mkdir(parents=True)
    repo.mkdir()
    (site / "pkg" / "mod.py").write_text("x = 1\n")
    (site / "gone.py").write_text("")
    user_site = tmp_path / "absent" / "site-packages"
    roots, skip = [str(site), str(user_site), str(repo)], [str(repo)]
    before = sup.fingerprint(roots, skip)
    assert before[str(user_site)] is None and str(repo) not in before
    assert sup.outside_changes(before, sup.fingerprint(roots, skip)) == []

    stat = os.stat(site / "pkg" / "mod.py")
    (site / "pkg" / "mod.py").write_text("x = 2\n")  # same size, mtime put back: the change time still moves
    os.utime(site / "pkg" / "mod.py", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    (site / "hook.pth").write_text("import calc\n")
    (site / "gone.py").unlink()
    (repo / "out.txt").write_text("the repository is not watched\n")
    user_site.mkdir(parents=True)
    changed = sup.outside_changes(before, sup.fingerprint(roots, skip))
    assert changed == sorted(
        [str(site / "gone.py"), str(site / "hook.pth"), str(site / "pkg" / "mod.py"), str(user_site)]
    )


def test_fingerprint_is_capped(tmp_path: Path):
    sup = supervise_module()
    for i in range(50):
        (tmp_path / f"f{i:02}").write_text("")
    capped = sup.fingerprint([str(tmp_path)], [], limit=10)
    assert len(capped) == 10
    assert capped == sup.fingerprint([str(tmp_path)], [], limit=10)  # the same entries each time


def test_interpreter_dirs_name_site_packages_and_etc():
    sup = supervise_module()
    dirs = sup.interpreter_dirs()
    assert "/etc" in dirs and any(d.endswith(("site-packages", "dist-packages")) for d in dirs)


def test_a_task_may_not_set_a_variable_the_verifier_drops_or_sets():
    from agentbon.types import RUNNER_ENV

    module = supervise_module()
    module.os = SimpleNamespace(environ={})  # this fresh copy sees an empty environment: what it sets is left
    assert set(module.DROPPED_ENV) | set(module.clean_env({})) <= RUNNER_ENV
