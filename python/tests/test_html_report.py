"""emit's HTML report in a real browser: dp-opt writes the report of a
training step of a bundled model placed on eight GPUs, and headless
Debian chromium (/usr/bin/chromium, utils/setup.sh installs it) renders
it to a screenshot, runs its script and dumps the DOM the script leaves.
The script must log nothing to the console (chromium writes every console
message and uncaught exception to stderr as CONSOLE), must turn each
device's node count into "shown of all", and filters the nodes table by
the words in the page's address (#filter=...)."""

import os
import re
import struct
import subprocess
import zlib
from html.parser import HTMLParser

import pytest

from conftest import PYTHON_DIR, dp_opt

CHROMIUM = "/usr/bin/chromium"
MODEL = os.path.join(os.path.dirname(PYTHON_DIR), "models",
                     "inception_v3.onnx")
# metis spreads inception_v3's training step at batch 8 over all eight.
CLUSTER = "v100x8-nvlink"
BATCH = 8
DEVICES = ["gpu:%d" % i for i in range(8)]
WIDTH, HEIGHT = 1400, 2000
TIMEOUT = 60

pytestmark = pytest.mark.skipif(
    not os.path.isfile(CHROMIUM),
    reason="%s is absent (utils/setup.sh installs chromium)" % CHROMIUM)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("html")
    passes = ("import-onnx{batch=%d},training-graph{optimizer=adam},"
              "cost-annotate,place{algo=metis},simulate,"
              "emit{format=html,out=%s/}" % (BATCH, out))
    subprocess.run([dp_opt(), "-passes=" + passes, "-cluster=" + CLUSTER,
                    "-disable-output", MODEL],
                   check=True, capture_output=True, timeout=TIMEOUT)
    path = out / "inception_v3.report.html"
    assert path.is_file()
    return path


def chromium(tmp_path, args, url):
    """Runs headless chromium on url; returns its stdout, after checking
    that the page logged nothing to the console."""
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox",
         "--enable-logging=stderr", "--v=0",
         "--user-data-dir=%s" % (tmp_path / "profile"),
         "--window-size=%d,%d" % (WIDTH, HEIGHT)] + args + [url],
        capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    console = [line for line in proc.stderr.splitlines()
               if ":CONSOLE" in line or "Uncaught" in line]
    assert not console, "the page logged:\n" + "\n".join(console)
    return proc.stdout


def dump_dom(tmp_path, report, fragment=""):
    return chromium(tmp_path, ["--dump-dom"], report.as_uri() + fragment)


class Page(HTMLParser):
    """The summary table's rows, the device table's first cells, the
    nodes table's rows and the per-device node counts of a page."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tables, self.cells, self.row = [], [], None
        self.summary, self.devices, self.nodes = {}, [], []
        self.counts = {}
        self.count_device = None
        self.filter_box = None
        self.text = text
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self.tables.append(attrs.get("class", ""))
        elif tag == "tr":
            self.row = {"attrs": attrs, "cells": []}
        elif tag in ("td", "th") and self.row is not None:
            self.row["cells"].append("")
            self.row["header"] = self.row.get("header", tag == "th")
        elif tag == "span" and "data-device" in attrs:
            self.count_device = attrs["data-device"]
            self.counts[self.count_device] = ""
        elif tag == "input" and attrs.get("id") == "node-filter":
            self.filter_box = attrs

    def handle_endtag(self, tag):
        if tag == "table":
            self.tables.pop()
        elif tag == "span":
            self.count_device = None
        elif tag == "tr" and self.row is not None:
            cells = [c.strip() for c in self.row["cells"]]
            table = self.tables[-1] if self.tables else ""
            if table == "summary" and len(cells) == 2:
                self.summary[cells[0]] = cells[1]
            elif table == "devices" and not self.row.get("header", True):
                self.devices.append(cells[0])
            elif table == "nodes" and "data-device" in self.row["attrs"]:
                self.nodes.append((self.row["attrs"], cells))
            self.row = None

    def handle_data(self, data):
        if self.count_device is not None:
            self.counts[self.count_device] += data
        if self.row is not None and self.row["cells"]:
            self.row["cells"][-1] += data


def png_scanlines(path):
    """The width, the height and the number of distinct (filtered)
    scanlines of a PNG: a blank page has two or so."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        size, = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + size]
        pos += 12 + size
        if kind == b"IHDR":
            header = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
    width, height, depth, color = header
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color]
    stride = 1 + width * channels * depth // 8
    raw = zlib.decompress(idat)
    assert len(raw) == height * stride
    rows = {raw[i * stride:(i + 1) * stride] for i in range(height)}
    return width, height, len(rows)


def test_screenshot(tmp_path, report):
    shot = tmp_path / "report.png"
    chromium(tmp_path, ["--screenshot=%s" % shot], report.as_uri())
    width, height, distinct = png_scanlines(shot)
    assert (width, height) == (WIDTH, HEIGHT)
    # Tables, the timeline and the memory chart: most rows differ.
    assert distinct > HEIGHT // 4, "the screenshot is nearly blank"


def test_page_says_what_it_shows(tmp_path, report):
    page = Page(dump_dom(tmp_path, report))
    assert page.summary["model"].endswith("inception_v3.onnx")
    assert page.summary["step"] == "training (optimizer adam)"
    assert page.summary["batch"] == "%d (import-onnx{batch=})" % BATCH
    assert page.summary["inputs"] == "input f32[%d,3,299,299]" % BATCH
    assert page.summary["placer"] == "metis"
    assert page.devices[:8] == DEVICES


def test_script_counts_the_nodes(tmp_path, report):
    static = Page(report.read_text(encoding="utf-8"))
    page = Page(dump_dom(tmp_path, report))
    # Without the script: the box hidden, every row listed, plain counts.
    assert "hidden" in static.filter_box
    assert not any("hidden" in attrs for attrs, _ in static.nodes)
    total = {d: int(static.counts[d]) for d in DEVICES}
    assert sum(total.values()) == len(static.nodes)
    assert all(total.values()), "metis left a GPU without nodes"
    # The script ran to its end: the box shown, each count "N of N".
    assert "hidden" not in page.filter_box
    for d in DEVICES:
        assert page.counts[d] == "%d of %d" % (total[d], total[d])
    assert "showing %d of %d nodes" % (len(page.nodes), len(page.nodes)) \
        in page.text
    assert not any("hidden" in attrs for attrs, _ in page.nodes)


def test_filter_by_device(tmp_path, report):
    page = Page(dump_dom(tmp_path, report, "#filter=gpu:3"))
    shown = [cells for attrs, cells in page.nodes if "hidden" not in attrs]
    assert shown and all(cells[3].startswith("gpu:3") for cells in shown)
    for d in DEVICES:
        n = int(page.counts[d].split(" of ")[1])
        assert page.counts[d] == "%d of %d" % (n if d == "gpu:3" else 0, n)
    assert re.search(r'<details id="nodes" open', page.text)


def test_filter_by_op_type_and_phase(tmp_path, report):
    # Every word must match: the MaxPool nodes, each with a backward.
    page = Page(dump_dom(tmp_path, report, "#filter=maxpool%20backward"))
    shown = [cells for attrs, cells in page.nodes if "hidden" not in attrs]
    assert shown and all(cells[1] == "MaxPool" and "backward" in cells[2]
                         for cells in shown)
    every = [cells for _, cells in page.nodes if cells[1] == "MaxPool"]
    assert len(shown) == len(every)
