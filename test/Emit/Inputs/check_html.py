#!/usr/bin/env python3
"""Checks an HTML report of emit without a browser: it parses with Python's
html.parser, every element is closed in order (void elements and
self-closing SVG elements aside), it is one self-contained page (no
scripts, style sheets or images from elsewhere), it has the timeline SVG,
and each device named on the command line appears in the timeline and in
the device table.

    check_html.py REPORT.html DEVICE...   prints "ok: N devices"
"""
import sys
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
        "meta", "source", "track", "wbr"}


class Checker(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []
        self.errors = []
        self.doctype = False
        self.svg_text = []
        self.table_cells = {}
        self.tables = []
        self.external = []

    def handle_decl(self, decl):
        if decl.lower() == "doctype html":
            self.doctype = True

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("src", "href"):
            if key in attrs:
                self.external.append("%s %s=%s" % (tag, key, attrs[key]))
        if tag == "table":
            self.tables.append(attrs.get("class", ""))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass  # <rect .../>: opened and closed at once.

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("</%s> closes <%s> at line %d" % (
                tag, self.stack[-1] if self.stack else "nothing",
                self.getpos()[0]))
            return
        self.stack.pop()

    def handle_data(self, data):
        if "svg" in self.stack and "text" in self.stack:
            self.svg_text.append(data)
        if "td" in self.stack and self.tables:
            self.table_cells.setdefault(self.tables[-1], []).append(data)


def main():
    path, devices = sys.argv[1], sys.argv[2:]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    p = Checker()
    p.feed(text)
    p.close()
    errors = list(p.errors)
    if not p.doctype:
        errors.append("no <!DOCTYPE html>")
    if p.stack:
        errors.append("unclosed elements: %s" % p.stack)
    if p.external:
        errors.append("not self-contained: %s" % p.external)
    if "<svg" not in text:
        errors.append("no SVG timeline")
    cells = p.table_cells.get("devices", [])
    for d in devices:
        if not any(lane.startswith(d + " ") for lane in p.svg_text):
            errors.append("device %s has no timeline lane" % d)
        if d not in cells:
            errors.append("device %s is not in the device table" % d)
    if errors:
        sys.exit("check_html: %s: %s" % (path, "; ".join(errors)))
    print("ok: %d devices" % len(devices))


if __name__ == "__main__":
    main()
