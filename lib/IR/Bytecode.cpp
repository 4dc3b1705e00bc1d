//===- Bytecode.cpp - Binary form of the IR -------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// Layout (all integers LEB128; signed ones zig-zag encoded first; strings
// are a length and bytes; doubles are 8 little-endian bytes):
//
//   magic, version
//   graph name
//   opsets:       count, (domain, version)*
//   annotations:  attribute list
//   inputs:       count, (name, type)*
//   weights:      count, (name, type)*
//   ops:          count, op*
//   outputs:      count, tensor id*
//
//   op:   name, source name, domain, type,
//         operands: count, (tensor id + 1, 0 for none)*,
//         results:  count, (0 | 1 name type)*,
//         attributes, annotations
//   type: element type byte, rank, signed dims*
//   attribute list: count, (name, kind byte, value)*
//
// Tensor ids number tensors in the order they are declared: inputs, weights,
// then op results in op order, which is how Graph assigns them.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/Bytecode.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/bit.h"
#include "llvm/Support/Endian.h"

#include <cstring>

using namespace llvm;

namespace dp {

bool isBytecode(StringRef Bytes) { return Bytes.startswith(BytecodeMagic); }

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

namespace {
class Writer {
public:
  explicit Writer(raw_ostream &OS) : OS(OS) {}

  void u(uint64_t V) {
    do {
      uint8_t B = V & 0x7f;
      V >>= 7;
      OS << char(V ? B | 0x80 : B);
    } while (V);
  }
  void s(int64_t V) { u((uint64_t(V) << 1) ^ uint64_t(V >> 63)); }
  void str(StringRef S) {
    u(S.size());
    OS << S;
  }
  void f(double V) {
    char Buf[8];
    support::endian::write64le(Buf, bit_cast<uint64_t>(V));
    OS.write(Buf, 8);
  }
  void type(const TensorType &T) {
    OS << char(T.DType);
    u(T.Dims.size());
    for (int64_t D : T.Dims)
      s(D);
  }
  void summary(const GraphSummary &S) {
    s(S.Nodes);
    s(S.Inputs);
    s(S.Outputs);
    u(S.OpCounts.size());
    for (const auto &[Type, Count] : S.OpCounts) {
      str(Type);
      s(Count);
    }
  }
  /// Writes the count of \p Values, then each with \p Write.
  template <typename RangeT, typename T>
  void list(const RangeT &Values, void (Writer::*Write)(T)) {
    u(Values.size());
    for (const auto &V : Values)
      (this->*Write)(V);
  }
  void attr(const Attribute &A);
  void attrs(const AttributeList &L) {
    u(L.size());
    for (const NamedAttribute &A : L) {
      str(A.Name);
      attr(A.Value);
    }
  }

private:
  raw_ostream &OS;
};
} // namespace

void Writer::attr(const Attribute &A) {
  OS << char(A.getKind());
  switch (A.getKind()) {
  case AttrKind::Int:
    s(A.getInt());
    return;
  case AttrKind::Float:
    f(A.getFloat());
    return;
  case AttrKind::String:
    str(A.getString());
    return;
  case AttrKind::Ints:
    list(A.getInts(), &Writer::s);
    return;
  case AttrKind::Floats:
    list(A.getFloats(), &Writer::f);
    return;
  case AttrKind::Strings:
    list(A.getStrings(), &Writer::str);
    return;
  case AttrKind::Tensor:
  case AttrKind::Tensors:
  case AttrKind::Type:
  case AttrKind::Types:
    list(A.getTensorTypes(), &Writer::type);
    return;
  case AttrKind::Graph:
  case AttrKind::Graphs:
    list(A.getGraphSummaries(), &Writer::summary);
    return;
  }
  llvm_unreachable("unknown AttrKind");
}

void writeBytecode(raw_ostream &OS, const Graph &G) {
  // Tensors are referenced by declaration order (inputs, weights, then op
  // results in op order), which is how the reader numbers them, whatever
  // order the graph created them in.
  std::vector<uint32_t> Index(G.getNumTensors(), NoId);
  uint32_t Next = 0;
  for (TensorId T : G.getInputs())
    Index[T] = Next++;
  for (TensorId T : G.getWeights())
    Index[T] = Next++;
  for (const Op &Node : G.ops())
    for (TensorId T : Node.Results)
      if (T != NoId)
        Index[T] = Next++;
  auto Ref = [&](TensorId T) {
    assert(Index[T] != NoId && "tensor is not declared: verify first");
    return Index[T];
  };

  Writer W(OS);
  OS << BytecodeMagic;
  W.u(BytecodeVersion);
  W.str(G.getName());
  W.u(G.getOpsets().size());
  for (const OpsetImport &O : G.getOpsets()) {
    W.str(O.Domain);
    W.s(O.Version);
  }
  W.attrs(G.getAnnotations());
  for (ArrayRef<TensorId> Decls : {G.getInputs(), G.getWeights()}) {
    W.u(Decls.size());
    for (TensorId T : Decls) {
      W.str(G.getTensor(T).Name);
      W.type(G.getTensor(T).Type);
    }
  }
  W.u(G.getNumOps());
  for (const Op &Node : G.ops()) {
    W.str(Node.Name);
    W.str(Node.SourceName);
    W.str(Node.Domain);
    W.str(Node.Type);
    W.u(Node.Operands.size());
    for (TensorId T : Node.Operands)
      W.u(T == NoId ? 0 : uint64_t(Ref(T)) + 1);
    W.u(Node.Results.size());
    for (TensorId T : Node.Results) {
      if (T == NoId) {
        W.u(0);
        continue;
      }
      W.u(1);
      W.str(G.getTensor(T).Name);
      W.type(G.getTensor(T).Type);
    }
    W.attrs(Node.Attrs);
    W.attrs(Node.Annotations);
  }
  W.u(G.getOutputs().size());
  for (TensorId T : G.getOutputs())
    W.u(Ref(T));
}

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

namespace {
class Reader {
public:
  explicit Reader(MemoryBufferRef Buf)
      : Buf(Buf), Data(Buf.getBuffer()), Pos(0) {}

  Expected<Graph> read();

private:
  Error error(const Twine &Msg) const {
    return makeFileError(Buf.getBufferIdentifier(), 0, 0,
                         "invalid bytecode at byte " + Twine(Pos) + ": " +
                             Msg);
  }
  Error u(uint64_t &V);
  Error s(int64_t &V);
  /// Reads a count of items each at least \p MinItemBytes long, refusing
  /// counts the rest of the input cannot hold.
  Error count(uint64_t &N, unsigned MinItemBytes = 1);
  Error str(std::string &S);
  Error f(double &V);
  Error byte(uint8_t &B);
  Error type(TensorType &T, bool AllowUnknown);
  Error summary(GraphSummary &S);
  /// Reads one value with \p Read into the attribute \p Make builds. (The
  /// default type of \p Make, here and in listAttr, picks the static
  /// builder among Attribute's overloads, as in Attribute::getInt.)
  template <typename T, typename MakeFn = Attribute (*)(T)>
  Error scalarAttr(Attribute &A, Error (Reader::*Read)(T &), MakeFn Make) {
    T V{};
    if (Error E = (this->*Read)(V))
      return E;
    A = Make(std::move(V));
    return Error::success();
  }
  /// Reads a count of values each at least \p MinItemBytes long (one
  /// value when \p Single), then the values with \p Read, into the
  /// attribute \p Make builds.
  template <typename T, typename ReadFn,
            typename MakeFn = Attribute (*)(std::vector<T>)>
  Error listAttr(Attribute &A, unsigned MinItemBytes, bool Single, ReadFn Read,
                 MakeFn Make) {
    uint64_t N;
    if (Error E = count(N, MinItemBytes))
      return E;
    if (Single && N != 1)
      return error("a single-valued attribute holds " + Twine(N) + " values");
    std::vector<T> V(N);
    for (T &X : V)
      if (Error E = Read(X))
        return E;
    A = Make(std::move(V));
    return Error::success();
  }
  Error attr(Attribute &A);
  Error attrs(AttributeList &L);
  Error tensorId(const Graph &G, uint64_t &Id);
  /// The parts of a graph, in the order the format holds them.
  Error header(Graph &G);
  Error opsets(Graph &G);
  Error inputsAndWeights(Graph &G);
  Error op(Graph &G);
  Error operands(const Graph &G, StringRef Name,
                 std::vector<TensorId> &Operands);
  /// Reads the results of an op into \p Results, which refer to the names
  /// in \p ResultNames.
  Error results(const Graph &G, std::vector<std::string> &ResultNames,
                std::vector<Graph::ResultSpec> &Results);
  Error outputs(Graph &G);

  MemoryBufferRef Buf;
  StringRef Data;
  size_t Pos;
};
} // namespace

Error Reader::u(uint64_t &V) {
  V = 0;
  for (unsigned Shift = 0;; Shift += 7) {
    if (Pos == Data.size())
      return error("unexpected end of input");
    if (Shift > 63)
      return error("integer too large");
    uint8_t B = Data[Pos++];
    V |= uint64_t(B & 0x7f) << Shift;
    if (!(B & 0x80))
      return Error::success();
  }
}

Error Reader::s(int64_t &V) {
  uint64_t Z;
  if (Error E = u(Z))
    return E;
  V = int64_t(Z >> 1) ^ -int64_t(Z & 1);
  return Error::success();
}

Error Reader::count(uint64_t &N, unsigned MinItemBytes) {
  if (Error E = u(N))
    return E;
  if (N > (Data.size() - Pos) / MinItemBytes)
    return error("count " + Twine(N) + " exceeds the rest of the input");
  return Error::success();
}

Error Reader::str(std::string &S) {
  uint64_t N;
  if (Error E = count(N))
    return E;
  S.assign(Data.data() + Pos, N);
  Pos += N;
  return Error::success();
}

Error Reader::f(double &V) {
  if (Data.size() - Pos < 8)
    return error("unexpected end of input");
  V = bit_cast<double>(support::endian::read64le(Data.data() + Pos));
  Pos += 8;
  return Error::success();
}

Error Reader::byte(uint8_t &B) {
  if (Pos == Data.size())
    return error("unexpected end of input");
  B = Data[Pos++];
  return Error::success();
}

Error Reader::type(TensorType &T, bool AllowUnknown) {
  uint8_t K = 0;
  if (Error E = byte(K))
    return E;
  if (!isValidDType(K) && !(AllowUnknown && K == 0))
    return error("unknown element type " + Twine(K));
  T.DType = DTypeKind(K);
  uint64_t Rank;
  if (Error E = count(Rank))
    return E;
  T.Dims.resize(Rank);
  for (int64_t &D : T.Dims) {
    if (Error E = s(D))
      return E;
    if (D < 0 && !(AllowUnknown && D == UnknownDim))
      return error("negative dimension");
  }
  return Error::success();
}

Error Reader::summary(GraphSummary &S) {
  uint64_t N;
  if (Error E = s(S.Nodes))
    return E;
  if (Error E = s(S.Inputs))
    return E;
  if (Error E = s(S.Outputs))
    return E;
  if (Error E = count(N, 2))
    return E;
  S.OpCounts.resize(N);
  for (size_t I = 0; I != N; ++I) {
    auto &[Type, Count] = S.OpCounts[I];
    if (Error E = str(Type))
      return E;
    // The same rule as the text form: sorted, unique op types.
    if (I && !(S.OpCounts[I - 1].first < Type))
      return error("op types in a graph summary must be sorted and unique");
    if (Error E = s(Count))
      return E;
  }
  return Error::success();
}

Error Reader::attr(Attribute &A) {
  uint8_t K = 0;
  if (Error E = byte(K))
    return E;
  if (K > uint8_t(AttrKind::Types))
    return error("unknown attribute kind " + Twine(K));
  AttrKind Kind = AttrKind(K);
  auto ReadS = [this](int64_t &X) { return s(X); };
  auto ReadF = [this](double &X) { return f(X); };
  auto ReadStr = [this](std::string &X) { return str(X); };
  switch (Kind) {
  case AttrKind::Int:
    return scalarAttr(A, &Reader::s, Attribute::getInt);
  case AttrKind::Float:
    return scalarAttr(A, &Reader::f, Attribute::getFloat);
  case AttrKind::String:
    return scalarAttr(A, &Reader::str, Attribute::getString);
  case AttrKind::Ints:
    return listAttr<int64_t>(A, 1, false, ReadS, Attribute::getInts);
  case AttrKind::Floats:
    return listAttr<double>(A, 8, false, ReadF, Attribute::getFloats);
  case AttrKind::Strings:
    return listAttr<std::string>(A, 1, false, ReadStr, Attribute::getStrings);
  case AttrKind::Tensor:
  case AttrKind::Tensors:
  case AttrKind::Type:
  case AttrKind::Types:
    return listAttr<TensorType>(
        A, 2, Kind == AttrKind::Tensor || Kind == AttrKind::Type,
        [this](TensorType &T) { return type(T, /*AllowUnknown=*/true); },
        [Kind](std::vector<TensorType> V) {
          switch (Kind) {
          case AttrKind::Tensor:
            return Attribute::getTensor(std::move(V.front()));
          case AttrKind::Type:
            return Attribute::getType(std::move(V.front()));
          case AttrKind::Tensors:
            return Attribute::getTensors(std::move(V));
          default:
            return Attribute::getTypes(std::move(V));
          }
        });
  case AttrKind::Graph:
  case AttrKind::Graphs:
    return listAttr<GraphSummary>(
        A, 4, Kind == AttrKind::Graph,
        [this](GraphSummary &S) { return summary(S); },
        [Kind](std::vector<GraphSummary> V) {
          return Kind == AttrKind::Graph
                     ? Attribute::getGraph(std::move(V.front()))
                     : Attribute::getGraphs(std::move(V));
        });
  }
  llvm_unreachable("unknown AttrKind");
}

Error Reader::attrs(AttributeList &L) {
  uint64_t N;
  if (Error E = count(N, 2))
    return E;
  for (uint64_t I = 0; I != N; ++I) {
    std::string Name;
    if (Error E = str(Name))
      return E;
    if (L.contains(Name))
      return error("attribute '" + Name + "' is set twice");
    Attribute A;
    if (Error E = attr(A))
      return E;
    L.set(Name, std::move(A));
  }
  return Error::success();
}

Error Reader::tensorId(const Graph &G, uint64_t &Id) {
  if (Error E = u(Id))
    return E;
  if (Id >= G.getNumTensors())
    return error("reference to tensor " + Twine(Id) +
                 ", which is not defined yet");
  return Error::success();
}

Error Reader::header(Graph &G) {
  if (!isBytecode(Data))
    return error("not dp bytecode");
  Pos = BytecodeMagic.size();
  uint64_t Version;
  if (Error E = u(Version))
    return E;
  if (Version != BytecodeVersion)
    return error("bytecode version " + Twine(Version) +
                 " is not supported (expected " + Twine(BytecodeVersion) + ")");
  std::string S;
  if (Error E = str(S))
    return E;
  G.setName(S);
  return Error::success();
}

Error Reader::opsets(Graph &G) {
  uint64_t N;
  if (Error E = count(N, 2))
    return E;
  std::string S;
  for (uint64_t I = 0; I != N; ++I) {
    int64_t Version;
    if (Error E = str(S))
      return E;
    if (Error E = this->s(Version))
      return E;
    for (const OpsetImport &O : G.getOpsets())
      if (O.Domain == S)
        return error("opset \"" + S + "\" is imported twice");
    G.setOpset(S, Version);
  }
  return Error::success();
}

Error Reader::inputsAndWeights(Graph &G) {
  uint64_t N;
  std::string S;
  for (bool IsWeight : {false, true}) {
    if (Error E = count(N, 3))
      return E;
    for (uint64_t I = 0; I != N; ++I) {
      TensorType T;
      if (Error E = str(S))
        return E;
      if (Error E = type(T, /*AllowUnknown=*/false))
        return E;
      if (S.empty() || G.lookupTensor(S) != NoId)
        return error("tensor name '" + S + "' is empty or already defined");
      if (IsWeight)
        G.addWeight(S, std::move(T));
      else
        G.addInput(S, std::move(T));
    }
  }
  return Error::success();
}

Error Reader::operands(const Graph &G, StringRef Name,
                       std::vector<TensorId> &Operands) {
  uint64_t M;
  if (Error E = count(M))
    return E;
  Operands.assign(M, NoId);
  for (TensorId &T : Operands) {
    uint64_t Id;
    if (Error E = u(Id))
      return E;
    if (Id == 0)
      continue;
    if (Id - 1 >= G.getNumTensors())
      return error("op '" + Name + "' uses tensor " + Twine(Id - 1) +
                   ", which is not defined before it");
    T = TensorId(Id - 1);
  }
  return Error::success();
}

Error Reader::results(const Graph &G, std::vector<std::string> &ResultNames,
                      std::vector<Graph::ResultSpec> &Results) {
  uint64_t M;
  if (Error E = count(M))
    return E;
  ResultNames.assign(M, std::string());
  std::vector<TensorType> Types(M);
  for (uint64_t R = 0; R != M; ++R) {
    uint8_t Present = 0;
    if (Error E = byte(Present))
      return E;
    if (Present > 1)
      return error("invalid result marker");
    if (!Present)
      continue;
    if (Error E = str(ResultNames[R]))
      return E;
    if (ResultNames[R].empty() || G.lookupTensor(ResultNames[R]) != NoId ||
        std::count(ResultNames.begin(), ResultNames.begin() + R,
                   ResultNames[R]))
      return error("tensor name '" + ResultNames[R] +
                   "' is empty or already defined");
    if (Error E = type(Types[R], /*AllowUnknown=*/false))
      return E;
  }
  Results.clear();
  for (uint64_t R = 0; R != M; ++R)
    Results.push_back({ResultNames[R], Types[R]});
  return Error::success();
}

Error Reader::op(Graph &G) {
  std::string Name, Source, Domain, Type;
  if (Error E = str(Name))
    return E;
  if (Name.empty() || G.lookupOp(Name) != NoId)
    return error("op name '" + Name + "' is empty or already defined");
  if (Error E = str(Source))
    return E;
  if (Error E = str(Domain))
    return E;
  if (Error E = str(Type))
    return E;
  std::vector<TensorId> Operands;
  if (Error E = operands(G, Name, Operands))
    return E;
  // Results name their tensors by reference to ResultNames.
  std::vector<std::string> ResultNames;
  std::vector<Graph::ResultSpec> Results;
  if (Error E = results(G, ResultNames, Results))
    return E;
  AttributeList Attrs, Annotations;
  if (Error E = attrs(Attrs))
    return E;
  if (Error E = attrs(Annotations))
    return E;
  OpId Id = G.addOp(Name, Domain, Type, Operands, Results, std::move(Attrs));
  G.getOp(Id).Annotations = std::move(Annotations);
  G.setSourceName(Id, Source);
  return Error::success();
}

Error Reader::outputs(Graph &G) {
  uint64_t N;
  if (Error E = count(N))
    return E;
  for (uint64_t I = 0; I != N; ++I) {
    uint64_t Id;
    if (Error E = tensorId(G, Id))
      return E;
    if (is_contained(G.getOutputs(), TensorId(Id)))
      return error("tensor " + Twine(Id) + " is an output twice");
    G.addOutput(TensorId(Id));
  }
  return Error::success();
}

Expected<Graph> Reader::read() {
  Graph G;
  if (Error E = header(G))
    return std::move(E);
  if (Error E = opsets(G))
    return std::move(E);
  if (Error E = attrs(G.getAnnotations()))
    return std::move(E);
  if (Error E = inputsAndWeights(G))
    return std::move(E);
  uint64_t N;
  if (Error E = count(N, 6))
    return std::move(E);
  for (uint64_t I = 0; I != N; ++I)
    if (Error E = op(G))
      return std::move(E);
  if (Error E = outputs(G))
    return std::move(E);
  if (Pos != Data.size())
    return error("trailing bytes after the graph");
  return std::move(G);
}

Expected<Graph> readBytecode(MemoryBufferRef Buffer) {
  Reader R(Buffer);
  return R.read();
}

} // namespace dp
