"""README.md's tour works as written: its command lines, taken from the
README itself, run in order in a scratch copy of the repository's layout
(models/, python/, utils/ and the build tree linked), each one
succeeding, and leave the files the tour says they write."""

import json
import os
import re
import subprocess

from conftest import PYTHON_DIR, dp_opt

ROOT = os.path.dirname(PYTHON_DIR)
README = os.path.join(ROOT, "README.md")
# The whole tour: exports, a host probe, an annealed placement, a plan and
# their runs.
TOUR_TIMEOUT = 900


def tour_lines(text):
    """The shell lines of the README's "A short tour" section: its
    indented block, continuation lines joined, comment lines left out."""
    section = text.split("## A short tour", 1)[1].split("\n## ", 1)[0]
    lines, current = [], ""
    for raw in section.splitlines():
        if not raw.startswith("    "):
            continue
        line = raw[4:]
        current += line.strip() if current else line
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        if current.strip() and not current.lstrip().startswith("#"):
            lines.append(current)
        current = ""
    return lines


def test_tour_lines_are_found():
    with open(README) as f:
        lines = tour_lines(f.read())
    assert lines[0].startswith("export PATH=$PWD/build/bin:$PATH")
    assert any("dp_torch run" in l for l in lines)
    assert not any(l.endswith("\\") for l in lines)


def test_tour_runs_as_written(tmp_path):
    with open(README) as f:
        lines = tour_lines(f.read())
    for name in ("models", "python", "utils"):
        os.symlink(os.path.join(ROOT, name), str(tmp_path / name))
    # The build tree whose dp-opt the tests use, where the tour looks.
    os.symlink(os.path.dirname(os.path.dirname(os.path.abspath(dp_opt()))),
               str(tmp_path / "build"))
    script = ["set -eE -o pipefail",
              "trap 'echo \"tour line failed: $BASH_COMMAND\" >&2' ERR"]
    script += lines
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(["bash", "-c", "\n".join(script)],
                          cwd=str(tmp_path), env=env, capture_output=True,
                          text=True, timeout=TOUR_TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    tour = tmp_path / "tour"
    for name in ("resnet50.dp", "s.json", "t.json", "m.dp", "train.dp",
                 "resnet50.placed.onnx", "resnet50.report.html",
                 "host2.json", "gnmt4.onnx", "gnmt4.placed.onnx",
                 "run.json"):
        assert (tour / name).is_file(), name
    report = json.loads((tour / "run.json").read_text())
    assert report["mode"] == "train"
    assert report["ranks"] == len(report["devices"])
    assert report["predicted"] is not None
    # The plan ran on its two stages, its prediction beside it.
    plan = json.loads((tour / "plan.json").read_text())
    assert plan["ranks"] == 2 and plan["plan"]["microbatches"] == 2
    assert plan["predicted"] is not None
    # What emit said it wrote is there.
    for path in re.findall(r"^emit: wrote (\S+)", proc.stderr, re.M):
        assert (tmp_path / path).exists(), path
