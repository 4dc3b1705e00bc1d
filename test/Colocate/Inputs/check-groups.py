#!/usr/bin/env python3
"""Checks the groups colocate wrote into dp IR text (read from stdin).

Every op must have a group; group ids must be dense, numbered in order of
each group's first op; an op with a colocate hint must share its target's
group; the graph annotation `groups` must be the count. Prints
"ok: N groups" or the first violation (and exits 1).
"""
import re
import sys

OP = re.compile(r'^  op @("(?:[^"\\]|\\.)*"|[^ ]+) = ')
HINT = re.compile(r'colocate = "((?:[^"\\]|\\.)*)"')
GROUP = re.compile(r'[\[ ]group = (\d+)[,\]]')
GROUPS = re.compile(r'^  annotations \[.*\bgroups = (\d+)')


def main():
    group_of = {}
    hints = []
    declared = None
    next_id = 0
    for line in sys.stdin:
        m = GROUPS.match(line)
        if m:
            declared = int(m.group(1))
            continue
        m = OP.match(line)
        if not m:
            continue
        name = m.group(1)
        if name.startswith('"'):
            name = name[1:-1].replace('\\"', '"').replace('\\\\', '\\')
        attrs = line[line.rfind('['):] if '[' in line else ''
        g = GROUP.search(attrs)
        if not g:
            print("error: op '%s' has no group" % name)
            return 1
        gid = int(g.group(1))
        if gid > next_id:
            print("error: op '%s' opens group %d before group %d"
                  % (name, gid, next_id))
            return 1
        if gid == next_id:
            next_id += 1
        group_of[name] = gid
        h = HINT.search(attrs)
        if h:
            hints.append((name, h.group(1)))
    for name, target in hints:
        if target in group_of and group_of[target] != group_of[name]:
            print("error: op '%s' (group %d) is split from its hint '%s' "
                  "(group %d)" % (name, group_of[name], target,
                                  group_of[target]))
            return 1
    if declared != next_id:
        print("error: the graph says groups = %s, the ops have %d"
              % (declared, next_id))
        return 1
    print("ok: %d groups, %d hints kept" % (next_id, len(hints)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
