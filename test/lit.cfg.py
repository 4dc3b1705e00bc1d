# -*- Python -*- lit configuration for dp's tests.
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
