"""host-cluster: this machine described as a dp cluster, read by dp-opt."""

import ctypes
import json
import subprocess

import pytest
import torch

from conftest import dp_opt, run_runtime

from dp_torch.module import set_threads


def test_host_cluster_is_a_cluster_dp_opt_reads(tmp_path):
    out = tmp_path / "host2.json"
    proc = run_runtime(["host-cluster", "--workers", "2", "--rounds", "3",
                        "--out", str(out)], tmp_path)
    assert "host2: link" in proc.stderr
    cluster = json.loads(out.read_text())
    assert [d["name"] for d in cluster["devices"]] == ["cpu:0", "cpu:1"]
    (link,) = cluster["links"]
    assert link["between"] == ["cpu:0", "cpu:1"]
    assert link["bandwidth"] > 0 and link["latency"] > 0
    # The workers' processors copy the messages: each end keeps a share
    # of its speed while they move, one figure for both ends.
    assert 0 < link["speed_while_sending"] <= 1
    assert link["speed_while_receiving"] == link["speed_while_sending"]
    assert "while its messages move" in proc.stderr
    assert "while both compute" in proc.stderr
    (group,) = cluster["shared"]
    assert group["devices"] == ["cpu:0", "cpu:1"]
    assert group["speed"][0] == 1 and 0 < group["speed"][1] <= 1
    printed = subprocess.run([dp_opt(), "-print-cluster",
                              "-cluster=%s" % out], capture_output=True,
                             text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    assert "shared groups" in printed.stdout
    assert "cpu:0 cpu:1: 1 " in printed.stdout
    if link["speed_while_sending"] < 1:
        assert "ends keep" in printed.stdout


def test_host_cluster_needs_a_worker(tmp_path):
    proc = run_runtime(["host-cluster", "--workers", "0"], tmp_path,
                       expect_ok=False)
    assert proc.returncode == 1
    assert "--workers must be at least 1" in proc.stderr


def _openblas():
    with open("/proc/self/maps") as f:
        libs = sorted({line.split()[-1] for line in f
                       if "libopenblas" in line})
    return ctypes.CDLL(libs[0]) if libs else None


def test_set_threads_reaches_openblas():
    lib = _openblas()
    if lib is None or not hasattr(lib, "openblas_get_num_threads"):
        pytest.skip("torch here does not call OpenBLAS")
    before = torch.get_num_threads()
    try:
        set_threads(1)
        assert torch.get_num_threads() == 1
        assert lib.openblas_get_num_threads() == 1
    finally:
        set_threads(before)


def test_link_fit_takes_latency_from_the_smallest_message():
    from dp_torch.hostcluster import _fit
    # 50 us latency, 2 GB/s, and the megabyte messages scattered by 10 %:
    # a line through all sizes would put its intercept anywhere.
    points = [(4, 50e-6), (4096, 52e-6), (65536, 83e-6),
              (1 << 20, 50e-6 + 1.1 * (1 << 20) / 2e9),
              (8 << 20, 50e-6 + 0.9 * (8 << 20) / 2e9),
              (32 << 20, 50e-6 + 1.0 * (32 << 20) / 2e9)]
    latency, bandwidth = _fit(points)
    assert latency == 50e-6
    assert 1.8e9 < bandwidth < 2.2e9
    # Times that do not grow with size: the largest message's rate.
    latency, bandwidth = _fit([(4, 1e-4), (1 << 20, 1e-3), (8 << 20, 1e-3)])
    assert latency == 1e-4 and bandwidth == (8 << 20) / (1e-3 - 1e-4)


def test_busy_share_of_two_readings():
    from dp_torch.hostcluster import busy_share
    assert busy_share((100, 1000), (150, 1100)) == 0.5
    assert busy_share((100, 1000), (100, 1100)) == 0.0
    # No time passed: nothing to say.
    assert busy_share((100, 1000), (100, 1000)) == 0.0


def test_busy_warning_names_the_shares():
    from dp_torch.hostcluster import BUSY_WARNING, busy_warning
    assert busy_warning([None, None]) is None
    assert busy_warning([0.02, BUSY_WARNING]) is None
    text = busy_warning([0.02, 0.48])
    assert text.startswith("dp_torch: warning: other work took 2 % and "
                           "48 % of this machine's processor time")
    assert "probe again when the machine is idle" in text


def test_other_work_sees_processes_that_keep_every_core_busy():
    """With a spinning process per core, other work takes most of the
    machine (the spinners share it with whatever else runs, so the share
    is only bounded below)."""
    import os
    import sys
    from dp_torch.hostcluster import cpu_times, other_work
    if cpu_times() is None:
        pytest.skip("no /proc/stat")
    n = min(os.cpu_count() or 1, 16)
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(n)]
    try:
        import time
        time.sleep(0.3)  # the interpreters start
        share = other_work(1.0)
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    assert share > 0.6, share
