# -*- Python -*- lit configuration for dp's tests.
import glob
import os

import lit.formats

config.name = "dp"
config.test_format = lit.formats.ShTest(execute_external=False)
# Tests are small models in ONNX text syntax (.onnxtxt), dp IR text (.dp),
# or .test files that carry their inputs inline (split-file).
config.suffixes = [".test", ".onnxtxt", ".dp"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py",
                   "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dp_obj_root, "test")

# dp's tools first, then LLVM's FileCheck, not, count and split-file.
config.environment["PATH"] = os.pathsep.join(
    [config.dp_tools_dir, config.llvm_tools_dir,
     config.environment.get("PATH", "")])
config.substitutions.append(("%models", os.path.join(config.dp_src_root,
                                                     "models")))
config.substitutions.append(("%python", config.python_executable))
# %bench: the benchmark harness's directory (bench/run.py).
config.substitutions.append(("%bench", os.path.join(config.dp_src_root,
                                                    "bench")))
# %onnx-encode < model.textproto > model.onnx: binary ONNX from protobuf
# text, for what ONNX's text syntax cannot say (node names, external data).
# %protoc is protoc with onnx.proto importable as onnx/onnx.proto.
config.substitutions.append(
    ("%onnx-encode", "%s -I%s --encode=onnx.ModelProto onnx/onnx.proto"
     % (config.protoc, config.onnx_proto_root)))
config.substitutions.append(
    ("%protoc", "%s -I%s" % (config.protoc, config.onnx_proto_root)))
# Every FileCheck run scopes its variables to CHECK-LABEL blocks.
config.substitutions.append(("FileCheck", "FileCheck -enable-var-scope"))

# The sanitizer build (DP_ENABLE_SANITIZERS): a sanitizer report aborts, so
# that `not dp-opt` fails on it too (its default exit code is 1).
# LeakSanitizer's scan of dynamic TLS blocks (found through
# __tls_get_addr) can read a bogus block range once libtorch's plugin is
# loaded, and its tracer then dies with SIGSEGV at exit, whatever the
# program did ("Tracer caught signal 11", seen on colocrl-save-load.test):
# ASan does not track those blocks here.
if getattr(config, "dp_have_cbc", False):
    config.available_features.add("cbc")
if getattr(config, "dp_sanitizers", False):
    config.available_features.add("asan")
    for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        opts = config.environment.get(var, "")
        extra = ("intercept_tls_get_addr=0",) if var == "ASAN_OPTIONS" else ()
        config.environment[var] = ":".join(
            o for o in ("abort_on_error=1", "print_stacktrace=1") + extra +
            (opts,) if o)
# Debian's libonnx-testdata: the ONNX operator test models that
# test/Import/onnx-testdata.test imports.
onnx_testdata = "/usr/share/libonnx-testdata/data"
if os.path.isdir(onnx_testdata):
    config.available_features.add("onnx-testdata")
    config.substitutions.append(("%onnx-testdata", onnx_testdata))
config.substitutions.append(
    ("%import-sweep", "%s %s" % (config.python_executable,
                                 os.path.join(config.dp_src_root, "utils",
                                              "import-sweep.py"))))
config.substitutions.append(
    ("%testdata-shapes", "/usr/bin/python3 %s" % os.path.join(
        config.dp_src_root, "utils", "testdata-shapes.py")))

# Optional tools that utils/setup.sh installs, so that CI runs the tests
# that need them: Debian's python3-onnx (the real ONNX checker on emitted
# models; always /usr/bin/python3, whose modules Debian manages, not the
# python3 first on PATH) and graphviz (dot renders emitted graphs).
import shutil
import subprocess
config.substitutions.append(("%onnx-python", "/usr/bin/python3"))
# The build tree, for the test that installs from it (test/Install).
config.substitutions.append(("%dp-obj", config.dp_obj_root))
# A shared object that is not dp's learned placers' plugin (libm).
libm = sorted(glob.glob("/lib/*/libm.so.6") + glob.glob("/usr/lib/*/libm.so.6"))
if libm:
    config.available_features.add("libm")
    config.substitutions.append(("%dp-learn-plugin-other", libm[0]))
config.substitutions.append(("%emit-inputs",
                             os.path.join(config.test_source_root, "Emit",
                                          "Inputs")))
if os.path.exists("/usr/bin/python3") and subprocess.call(
        ["/usr/bin/python3", "-c", "import onnx"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
    config.available_features.add("python3-onnx")
if shutil.which("dot"):
    config.available_features.add("graphviz")
if shutil.which("make"):
    config.available_features.add("make")
