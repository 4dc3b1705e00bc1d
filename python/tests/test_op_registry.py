"""The runtime's kernels against the op registry (include/dp/IR/Ops.def).

ops.py holds the kernels as Python; the registry says, per op, whether the
runtime has one (RUNTIME: KERNEL or NO_KERNEL). The two must agree: every
op the registry gives a kernel has one in ops.py, and ops.py has no op the
registry lacks or marks NO_KERNEL.
"""

import os
import re

from conftest import PYTHON_DIR

from dp_torch.ops import KERNELS

OPS_DEF = os.path.join(os.path.dirname(PYTHON_DIR), "include", "dp", "IR",
                       "Ops.def")
FIELDS = ("NAME", "COST", "BACKWARD", "ONEDNN", "FEATURE", "OPSET", "RUNTIME")


def split_fields(text, start):
    """The top-level comma-separated fields of the parenthesized list
    opening at text[start], and the index after its closing parenthesis."""
    fields, depth, field = [], 0, ""
    for i in range(start, len(text)):
        c = text[i]
        if c == "(":
            depth += 1
            if depth == 1:
                continue
        elif c == ")":
            depth -= 1
            if depth == 0:
                fields.append(field.strip())
                return fields, i + 1
        elif c == "," and depth == 1:
            fields.append(field.strip())
            field = ""
            continue
        field += c
    raise AssertionError("%s: unterminated record at offset %d"
                         % (OPS_DEF, start))


def read_registry(path=OPS_DEF):
    """{op type: RUNTIME field} of the OP records of the default domain."""
    with open(path) as f:
        text = re.sub(r"//[^\n]*", "", f.read())
    ops = {}
    for m in re.finditer(r"^OP\(", text, re.M):
        fields, _ = split_fields(text, m.end() - 1)
        assert len(fields) == len(FIELDS), (
            "%s: record %s has %d fields, not %d"
            % (path, fields[0], len(fields), len(FIELDS)))
        name = fields[0].strip('"')
        assert name not in ops, "%s: %s has two records" % (path, name)
        runtime = fields[FIELDS.index("RUNTIME")]
        assert runtime in ("KERNEL", "NO_KERNEL"), (
            "%s: %s has RUNTIME %s" % (path, name, runtime))
        ops[name] = runtime
    return ops


def test_registry_parses():
    ops = read_registry()
    # The registry lists well over a hundred ops; a parser that found few
    # would check nothing.
    assert len(ops) > 100
    assert ops["Conv"] == "KERNEL"
    assert ops["Col2Im"] == "NO_KERNEL"


def test_every_registry_kernel_is_in_ops_py():
    missing = sorted(name for name, runtime in read_registry().items()
                     if runtime == "KERNEL" and name not in KERNELS)
    assert not missing, (
        "%s gives these ops a kernel that python/dp_torch/ops.py lacks: %s"
        % (OPS_DEF, ", ".join(missing)))


def test_ops_py_has_no_op_the_registry_lacks():
    ops = read_registry()
    unknown = sorted(name for name in KERNELS if name not in ops)
    assert not unknown, (
        "python/dp_torch/ops.py has kernels for ops %s has no record of: %s"
        % (OPS_DEF, ", ".join(unknown)))
    unmarked = sorted(name for name in KERNELS if ops[name] != "KERNEL")
    assert not unmarked, (
        "python/dp_torch/ops.py has kernels for ops %s marks NO_KERNEL: %s"
        % (OPS_DEF, ", ".join(unmarked)))
