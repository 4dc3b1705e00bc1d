//===- ModelReader.cpp - Reading an ONNX model, binary or text ------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "CrashGuard.h"
#include "dp/Import/ONNXImporter.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include "onnx/defs/parser.h"
#include "onnx/onnx_pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <climits>
#include <exception>
#include <regex>

using namespace llvm;

namespace dp {

bool looksLikeONNXText(StringRef Bytes) {
  StringRef Head = Bytes.take_front(4096);
  if (Head.empty())
    return false;
  for (unsigned char C : Head)
    if (C < 0x20 && C != '\t' && C != '\n' && C != '\r' && C != '\f' &&
        C != '\v')
      return false;
  return true;
}

/// Turns the "(line: L column: C)" of an ONNX parser message into a
/// located error.
static Error makeTextParseError(StringRef File, StringRef Message) {
  static const std::regex Pos(R"(\(line: (\d+) column: (\d+)\))");
  std::string Msg = Message.str();
  std::smatch M;
  unsigned Line = 0, Col = 0;
  if (std::regex_search(Msg, M, Pos)) {
    Line = std::stoul(M[1]);
    Col = std::stoul(M[2]);
  }
  // Keep the parser's own explanation: the text after its position header
  // and context lines.
  StringRef Text(Message);
  SmallVector<StringRef, 4> Lines;
  Text.split(Lines, '\n', -1, /*KeepEmpty=*/false);
  StringRef Why = Lines.empty() ? Text : Lines.back().trim();
  std::string Reason =
      Why.startswith("[ParseError") ? "syntax error" : Why.rtrim('.').str();
  if (Reason.size() > 1 && isupper(Reason[0]) && !isupper(Reason[1]))
    Reason[0] = toLower(Reason[0]);
  return makeFileError(File, Line, Col, "invalid ONNX text: " + Reason);
}

Error readONNXModel(MemoryBufferRef Buffer, onnx::ModelProto &Model) {
  StringRef Bytes = Buffer.getBuffer();
  StringRef File = Buffer.getBufferIdentifier();
  if (Bytes.empty())
    return makeFileError(File, 0, 0, "the file is empty");
  if (looksLikeONNXText(Bytes)) {
    // The ONNX parser wants a NUL-terminated string.
    std::string Text = Bytes.str();
    try {
      onnx::Status S;
      if (int Signal = runCatchingCrash(
              [&] { S = onnx::OnnxParser::Parse(Model, Text.c_str()); }))
        return makeFileError(File, 0, 0,
                             "invalid ONNX text: " +
                                 describeCrash("parser", Signal));
      if (!S.IsOK())
        return makeTextParseError(File, S.ErrorMessage());
    } catch (const std::exception &E) {
      // libonnx's parser converts numbers with std::stof and friends, which
      // throw on malformed literals instead of returning a status.
      return makeFileError(File, 0, 0,
                           Twine("invalid ONNX text: malformed literal (") +
                               E.what() + ")");
    }
    return Error::success();
  }
  if (Bytes.size() > size_t(INT_MAX))
    return makeFileError(File, 0, 0,
                         "the model is larger than 2 GiB, protobuf's limit "
                         "for one message; store its weights as external "
                         "data");
  google::protobuf::io::ArrayInputStream Raw(Bytes.data(), int(Bytes.size()));
  google::protobuf::io::CodedInputStream Coded(&Raw);
  Coded.SetTotalBytesLimit(INT_MAX);
  Coded.SetRecursionLimit(1024);
  if (!Model.ParseFromCodedStream(&Coded) || !Coded.ConsumedEntireMessage())
    return makeFileError(File, 0, 0,
                         "not a valid ONNX model: protobuf parsing failed "
                         "(the file is truncated or is not an ONNX model)");
  return Error::success();
}

} // namespace dp
