//===- Parser.cpp - Parsing the textual form ------------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/TextFormat.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/StringExtras.h"

using namespace llvm;

namespace dp {

namespace {

enum class TokKind {
  Eof,
  Error,
  Word,       // dp.graph, op, f32, tensor, none, inf, ...
  OpName,     // @name
  TensorName, // %name
  String,     // "..."
  Integer,    // -12
  Float,      // 1.5e-3, -2.0
  LBrace,
  RBrace,
  LParen,
  RParen,
  LSquare,
  RSquare,
  Less,
  Greater,
  Comma,
  Equal,
  Colon,
  ColonColon,
  Arrow,
  Question,
};

struct Token {
  TokKind Kind = TokKind::Eof;
  /// The token's text; for names and strings, the unescaped value.
  std::string Text;
  const char *Loc = nullptr;
};

static bool isNameChar(char C) {
  return isAlnum(C) || C == '_' || C == '.' || C == '$' || C == '/' ||
         C == '-';
}

class Lexer {
public:
  explicit Lexer(StringRef Buf) : Cur(Buf.begin()), End(Buf.end()) {}

  Token lex();
  /// The message of the last Error token.
  const std::string &getError() const { return ErrorMsg; }

private:
  Token make(TokKind K, const char *Start, std::string Text = {}) {
    Token T;
    T.Kind = K;
    T.Loc = Start;
    T.Text = std::move(Text);
    return T;
  }
  Token error(const char *Loc, const Twine &Msg) {
    ErrorMsg = Msg.str();
    return make(TokKind::Error, Loc);
  }
  bool lexQuoted(const char *Start, std::string &Out, Token &Err);
  Token lexNumber(const char *Start);

  const char *Cur;
  const char *End;
  std::string ErrorMsg;
};

} // namespace

bool Lexer::lexQuoted(const char *Start, std::string &Out, Token &Err) {
  assert(*Cur == '"');
  ++Cur;
  while (true) {
    if (Cur == End || *Cur == '\n') {
      Err = error(Start, "unterminated string");
      return false;
    }
    char C = *Cur++;
    if (C == '"')
      return true;
    if (C != '\\') {
      Out.push_back(C);
      continue;
    }
    if (Cur == End) {
      Err = error(Start, "unterminated string");
      return false;
    }
    char E = *Cur++;
    switch (E) {
    case '"':
    case '\\':
      Out.push_back(E);
      break;
    case 'n':
      Out.push_back('\n');
      break;
    case 't':
      Out.push_back('\t');
      break;
    case 'x': {
      if (End - Cur < 2 || !isHexDigit(Cur[0]) || !isHexDigit(Cur[1])) {
        Err = error(Cur - 2, "expected two hex digits after '\\x'");
        return false;
      }
      Out.push_back(char(hexFromNibbles(Cur[0], Cur[1])));
      Cur += 2;
      break;
    }
    default:
      Err = error(Cur - 2, Twine("unknown escape '\\") + Twine(E) + "'");
      return false;
    }
  }
}

Token Lexer::lexNumber(const char *Start) {
  // Start points at '-' or a digit; Cur is at Start.
  const char *P = Start;
  if (*P == '-')
    ++P;
  if (End - P >= 3 && StringRef(P, 3) == "inf" &&
      (P + 3 == End || !isNameChar(P[3]))) {
    Cur = P + 3;
    return make(TokKind::Float, Start, std::string(Start, Cur));
  }
  if (P == End || !isDigit(*P))
    return error(Start, "expected a number");
  bool IsFloat = false;
  while (P != End && isDigit(*P))
    ++P;
  if (P != End && *P == '.') {
    IsFloat = true;
    ++P;
    while (P != End && isDigit(*P))
      ++P;
  }
  if (P != End && (*P == 'e' || *P == 'E')) {
    IsFloat = true;
    ++P;
    if (P != End && (*P == '+' || *P == '-'))
      ++P;
    if (P == End || !isDigit(*P))
      return error(Start, "expected an exponent");
    while (P != End && isDigit(*P))
      ++P;
  }
  Cur = P;
  return make(IsFloat ? TokKind::Float : TokKind::Integer, Start,
              std::string(Start, Cur));
}

Token Lexer::lex() {
  // Skip white space and comments ("//" to the end of the line).
  while (Cur != End) {
    if (isSpace(*Cur)) {
      ++Cur;
      continue;
    }
    if (*Cur == '/' && Cur + 1 != End && Cur[1] == '/') {
      while (Cur != End && *Cur != '\n')
        ++Cur;
      continue;
    }
    break;
  }
  const char *Start = Cur;
  if (Cur == End)
    return make(TokKind::Eof, Start);
  char C = *Cur;
  switch (C) {
  case '{':
    ++Cur;
    return make(TokKind::LBrace, Start);
  case '}':
    ++Cur;
    return make(TokKind::RBrace, Start);
  case '(':
    ++Cur;
    return make(TokKind::LParen, Start);
  case ')':
    ++Cur;
    return make(TokKind::RParen, Start);
  case '[':
    ++Cur;
    return make(TokKind::LSquare, Start);
  case ']':
    ++Cur;
    return make(TokKind::RSquare, Start);
  case '<':
    ++Cur;
    return make(TokKind::Less, Start);
  case '>':
    ++Cur;
    return make(TokKind::Greater, Start);
  case ',':
    ++Cur;
    return make(TokKind::Comma, Start);
  case '=':
    ++Cur;
    return make(TokKind::Equal, Start);
  case '?':
    ++Cur;
    return make(TokKind::Question, Start);
  case ':':
    ++Cur;
    if (Cur != End && *Cur == ':') {
      ++Cur;
      return make(TokKind::ColonColon, Start);
    }
    return make(TokKind::Colon, Start);
  case '"': {
    std::string S;
    Token Err;
    if (!lexQuoted(Start, S, Err))
      return Err;
    return make(TokKind::String, Start, std::move(S));
  }
  case '@':
  case '%': {
    ++Cur;
    TokKind K = C == '@' ? TokKind::OpName : TokKind::TensorName;
    std::string S;
    if (Cur != End && *Cur == '"') {
      Token Err;
      if (!lexQuoted(Start, S, Err))
        return Err;
      if (S.empty())
        return error(Start, "names cannot be empty");
      return make(K, Start, std::move(S));
    }
    const char *NameStart = Cur;
    while (Cur != End && isNameChar(*Cur))
      ++Cur;
    if (Cur == NameStart)
      return error(Start, Twine("expected a name after '") + Twine(C) + "'");
    return make(K, Start, std::string(NameStart, Cur));
  }
  case '-':
    if (Cur + 1 != End && Cur[1] == '>') {
      Cur += 2;
      return make(TokKind::Arrow, Start);
    }
    return lexNumber(Start);
  default:
    break;
  }
  if (isDigit(C))
    return lexNumber(Start);
  if (isAlpha(C) || C == '_') {
    while (Cur != End && (isAlnum(*Cur) || *Cur == '_' || *Cur == '.'))
      ++Cur;
    return make(TokKind::Word, Start, std::string(Start, Cur));
  }
  ++Cur;
  if (isPrint(C))
    return error(Start, Twine("unexpected character '") + Twine(C) + "'");
  return error(Start, "unexpected byte 0x" + utohexstr(uint8_t(C)));
}

namespace {

class Parser {
public:
  explicit Parser(MemoryBufferRef Buf) : Buf(Buf), Lex(Buf.getBuffer()) {
    consume();
  }

  Expected<Graph> parse();

private:
  /// Moves to the next token.
  void consume() { Tok = Lex.lex(); }

  Error errorAt(const char *Loc, const Twine &Msg) const;
  Error errorHere(const Twine &Msg) const {
    if (Tok.Kind == TokKind::Error)
      return errorAt(Tok.Loc, Lex.getError());
    return errorAt(Tok.Loc, Msg);
  }
  Error expect(TokKind K, StringRef What) {
    if (Tok.Kind != K)
      return errorHere(Twine("expected ") + What);
    consume();
    return Error::success();
  }
  bool consumeIf(TokKind K) {
    if (Tok.Kind != K)
      return false;
    consume();
    return true;
  }
  bool isWord(StringRef W) const {
    return Tok.Kind == TokKind::Word && Tok.Text == W;
  }

  Error parseGraphBody(Graph &G);
  Error parseOp(Graph &G);
  Error parseTensorDecl(Graph &G, bool IsWeight);
  /// Parses a name token of \p Kind (an error "expected \p Expected"
  /// otherwise) into \p Name; a name \p IsDefined holds is an error at it.
  Error parseNewName(TokKind Kind, const Twine &Expected,
                     function_ref<bool(StringRef)> IsDefined,
                     std::string &Name);
  /// Parses "%name : type" naming a new tensor (see parseNewName);
  /// \p Colon is what the error wants when the ':' is missing.
  Error parseNewTensor(const Twine &Expected, StringRef Colon,
                       function_ref<bool(StringRef)> IsDefined,
                       std::string &Name, TensorType &T);
  Error parseTensorType(TensorType &T, bool AllowUnknown);
  Error parseIdentifier(std::string &Out, StringRef What);
  Error parseAttributeList(AttributeList &L, TokKind Close);
  Error parseAttribute(Attribute &A);
  Error parseListAttribute(Attribute &A);
  /// A float attribute: a number, nan or inf.
  Error parseFloatAttribute(Attribute &A);
  /// Parses "<Prefix><type>" (tensor<f32[2]>, type<?[?]>).
  Error parseTypeAttr(StringRef Prefix, TensorType &T);
  /// Parses one or more comma-separated elements with \p ParseOne.
  template <typename T, typename Fn>
  Error parseElements(std::vector<T> &V, Fn ParseOne);
  Error parseGraphSummary(GraphSummary &S);
  Error parseInt(int64_t &V);
  Error parseFloat(double &V);

  MemoryBufferRef Buf;
  Lexer Lex;
  Token Tok;
};

} // namespace

Error Parser::errorAt(const char *Loc, const Twine &Msg) const {
  StringRef Text = Buf.getBuffer();
  unsigned Line = 1, Col = 1;
  for (const char *P = Text.begin(); P < Loc && P != Text.end(); ++P) {
    if (*P == '\n') {
      ++Line;
      Col = 1;
    } else {
      ++Col;
    }
  }
  return makeFileError(Buf.getBufferIdentifier(), Line, Col, Msg);
}

Error Parser::parseInt(int64_t &V) {
  if (Tok.Kind != TokKind::Integer)
    return errorHere("expected an integer");
  if (!to_integer(StringRef(Tok.Text), V, 10))
    return errorHere("integer out of range");
  consume();
  return Error::success();
}

Error Parser::parseFloat(double &V) {
  if (Tok.Kind == TokKind::Word && Tok.Text == "nan") {
    V = std::numeric_limits<double>::quiet_NaN();
    consume();
    return Error::success();
  }
  if (Tok.Kind == TokKind::Word && Tok.Text == "inf") {
    V = std::numeric_limits<double>::infinity();
    consume();
    return Error::success();
  }
  if (Tok.Kind != TokKind::Float || !parseDouble(Tok.Text, V))
    return errorHere("expected a floating-point number");
  consume();
  return Error::success();
}

Error Parser::parseIdentifier(std::string &Out, StringRef What) {
  if (Tok.Kind != TokKind::Word && Tok.Kind != TokKind::String)
    return errorHere(Twine("expected ") + What);
  Out = Tok.Text;
  consume();
  return Error::success();
}

Error Parser::parseTensorType(TensorType &T, bool AllowUnknown) {
  if (Tok.Kind == TokKind::Question && AllowUnknown) {
    T.DType = DTypeKind::Undefined;
  } else {
    if (Tok.Kind != TokKind::Word)
      return errorHere("expected an element type such as 'f32'");
    Optional<DTypeKind> K = parseDTypeName(Tok.Text);
    if (!K)
      return errorHere("unknown element type '" + Tok.Text + "'");
    T.DType = *K;
  }
  consume();
  if (Error E = expect(TokKind::LSquare, "'[' after the element type"))
    return E;
  T.Dims.clear();
  if (consumeIf(TokKind::RSquare))
    return Error::success();
  do {
    if (Tok.Kind == TokKind::Question && AllowUnknown) {
      T.Dims.push_back(UnknownDim);
      consume();
      continue;
    }
    int64_t D;
    if (Tok.Kind != TokKind::Integer)
      return errorHere("expected a dimension");
    const char *DimLoc = Tok.Loc;
    if (Error E = parseInt(D))
      return E;
    if (D < 0)
      return errorAt(DimLoc, "dimensions cannot be negative");
    T.Dims.push_back(D);
  } while (consumeIf(TokKind::Comma));
  return expect(TokKind::RSquare, "',' or ']' in a shape");
}

Error Parser::parseGraphSummary(GraphSummary &S) {
  // graph<nodes = N, inputs = N, outputs = N, ops = {T = N, ...}>
  if (Error E = expect(TokKind::Less, "'<' after 'graph'"))
    return E;
  auto Field = [&](StringRef Name, int64_t &V, bool Last) -> Error {
    if (!isWord(Name))
      return errorHere("expected '" + Name + "'");
    consume();
    if (Error E = expect(TokKind::Equal, "'='"))
      return E;
    if (Error E = parseInt(V))
      return E;
    return Last ? Error::success() : expect(TokKind::Comma, "','");
  };
  if (Error E = Field("nodes", S.Nodes, false))
    return E;
  if (Error E = Field("inputs", S.Inputs, false))
    return E;
  if (Error E = Field("outputs", S.Outputs, false))
    return E;
  if (!isWord("ops"))
    return errorHere("expected 'ops'");
  consume();
  if (Error E = expect(TokKind::Equal, "'='"))
    return E;
  if (Error E = expect(TokKind::LBrace, "'{'"))
    return E;
  S.OpCounts.clear();
  if (!consumeIf(TokKind::RBrace)) {
    do {
      std::string Type;
      int64_t Count;
      if (Error E = parseIdentifier(Type, "an op type"))
        return E;
      if (!S.OpCounts.empty() && !(S.OpCounts.back().first < Type))
        return errorHere("op types in a graph summary must be sorted and "
                         "unique");
      if (Error E = expect(TokKind::Equal, "'='"))
        return E;
      if (Error E = parseInt(Count))
        return E;
      S.OpCounts.emplace_back(std::move(Type), Count);
    } while (consumeIf(TokKind::Comma));
    if (Error E = expect(TokKind::RBrace, "',' or '}'"))
      return E;
  }
  return expect(TokKind::Greater, "'>' to end the graph summary");
}

Error Parser::parseTypeAttr(StringRef Prefix, TensorType &T) {
  if (!isWord(Prefix))
    return errorHere("expected '" + Prefix + "'");
  consume();
  if (Error E = expect(TokKind::Less, "'<'"))
    return E;
  if (Error E = parseTensorType(T, /*AllowUnknown=*/true))
    return E;
  return expect(TokKind::Greater, "'>'");
}

template <typename T, typename Fn>
Error Parser::parseElements(std::vector<T> &V, Fn ParseOne) {
  do {
    T X;
    if (Error E = ParseOne(X))
      return E;
    V.push_back(std::move(X));
  } while (consumeIf(TokKind::Comma));
  return Error::success();
}

Error Parser::parseListAttribute(Attribute &A) {
  // '[' already consumed; the first element decides the kind.
  auto Float = [&](double &X) { return parseFloat(X); };
  bool IsFloat = Tok.Kind == TokKind::Float || isWord("nan") || isWord("inf");
  if (Tok.Kind == TokKind::Integer) {
    std::vector<int64_t> V;
    if (Error E = parseElements(V, [&](int64_t &X) { return parseInt(X); }))
      return E;
    A = Attribute::getInts(std::move(V));
  } else if (IsFloat) {
    std::vector<double> V;
    if (Error E = parseElements(V, Float))
      return E;
    A = Attribute::getFloats(std::move(V));
  } else if (Tok.Kind == TokKind::String) {
    std::vector<std::string> V;
    if (Error E = parseElements(V, [&](std::string &X) -> Error {
          if (Tok.Kind != TokKind::String)
            return errorHere("expected a string");
          X = Tok.Text;
          consume();
          return Error::success();
        }))
      return E;
    A = Attribute::getStrings(std::move(V));
  } else if (isWord("graph")) {
    std::vector<GraphSummary> V;
    if (Error E = parseElements(V, [&](GraphSummary &S) -> Error {
          if (!isWord("graph"))
            return errorHere("expected 'graph'");
          consume();
          return parseGraphSummary(S);
        }))
      return E;
    A = Attribute::getGraphs(std::move(V));
  } else if (isWord("tensor") || isWord("type")) {
    std::string Head = Tok.Text;
    std::vector<TensorType> V;
    if (Error E = parseElements(
            V, [&](TensorType &T) { return parseTypeAttr(Head, T); }))
      return E;
    A = Head == "tensor" ? Attribute::getTensors(std::move(V))
                         : Attribute::getTypes(std::move(V));
  } else {
    return errorHere("expected a list element");
  }
  return expect(TokKind::RSquare, "',' or ']' in a list");
}

Error Parser::parseFloatAttribute(Attribute &A) {
  double V;
  if (Error E = parseFloat(V))
    return E;
  A = Attribute::getFloat(V);
  return Error::success();
}

Error Parser::parseAttribute(Attribute &A) {
  switch (Tok.Kind) {
  case TokKind::Integer: {
    int64_t V;
    if (Error E = parseInt(V))
      return E;
    A = Attribute::getInt(V);
    return Error::success();
  }
  case TokKind::Float:
    return parseFloatAttribute(A);
  case TokKind::String:
    A = Attribute::getString(Tok.Text);
    consume();
    return Error::success();
  case TokKind::LSquare:
    consume();
    if (Tok.Kind == TokKind::RSquare)
      return errorHere("an empty list is written with its kind, e.g. "
                       "'ints[]'");
    return parseListAttribute(A);
  case TokKind::Word:
    break;
  default:
    return errorHere("expected an attribute value");
  }

  std::string Head = Tok.Text;
  if (Head == "nan" || Head == "inf")
    return parseFloatAttribute(A);
  using MakeEmptyFn = Attribute (*)();
  static const std::pair<const char *, MakeEmptyFn> EmptyLists[] = {
      {"ints", [] { return Attribute::getInts({}); }},
      {"floats", [] { return Attribute::getFloats({}); }},
      {"strings", [] { return Attribute::getStrings({}); }},
      {"tensors", [] { return Attribute::getTensors({}); }},
      {"graphs", [] { return Attribute::getGraphs({}); }},
      {"types", [] { return Attribute::getTypes({}); }}};
  for (const auto &[Name, MakeEmpty] : EmptyLists) {
    if (Head != Name)
      continue;
    consume();
    if (Error E = expect(TokKind::LSquare, "'[' after '" + Head + "'"))
      return E;
    if (Error E = expect(TokKind::RSquare, "']' (only empty lists are "
                                           "written with their kind)"))
      return E;
    A = MakeEmpty();
    return Error::success();
  }
  if (Head == "tensor" || Head == "type") {
    TensorType T;
    if (Error E = parseTypeAttr(Head, T))
      return E;
    A = Head == "tensor" ? Attribute::getTensor(std::move(T))
                         : Attribute::getType(std::move(T));
    return Error::success();
  }
  if (Head == "graph") {
    consume();
    GraphSummary S;
    if (Error E = parseGraphSummary(S))
      return E;
    A = Attribute::getGraph(std::move(S));
    return Error::success();
  }
  return errorHere("expected an attribute value");
}

Error Parser::parseAttributeList(AttributeList &L, TokKind Close) {
  // The opening bracket is already consumed.
  if (consumeIf(Close))
    return Error::success();
  do {
    const char *NameLoc = Tok.Loc;
    std::string Name;
    if (Error E = parseIdentifier(Name, "an attribute name"))
      return E;
    if (L.contains(Name))
      return errorAt(NameLoc, "attribute '" + Name + "' is set twice");
    if (Error E = expect(TokKind::Equal, "'=' after the attribute name"))
      return E;
    Attribute A;
    if (Error E = parseAttribute(A))
      return E;
    L.set(Name, std::move(A));
  } while (consumeIf(TokKind::Comma));
  return expect(Close, Close == TokKind::RBrace ? "',' or '}'" : "',' or ']'");
}

Error Parser::parseNewName(TokKind Kind, const Twine &Expected,
                           function_ref<bool(StringRef)> IsDefined,
                           std::string &Name) {
  if (Tok.Kind != Kind)
    return errorHere("expected " + Expected);
  const char *NameLoc = Tok.Loc;
  Name = Tok.Text;
  consume();
  if (IsDefined(Name))
    return errorAt(NameLoc, (Kind == TokKind::OpName ? "op '@" : "tensor '%") +
                                Name + "' is already defined");
  return Error::success();
}

Error Parser::parseNewTensor(const Twine &Expected, StringRef Colon,
                             function_ref<bool(StringRef)> IsDefined,
                             std::string &Name, TensorType &T) {
  if (Error E = parseNewName(TokKind::TensorName, Expected, IsDefined, Name))
    return E;
  if (Error E = expect(TokKind::Colon, Colon))
    return E;
  return parseTensorType(T, /*AllowUnknown=*/false);
}

Error Parser::parseTensorDecl(Graph &G, bool IsWeight) {
  std::string Name;
  TensorType T;
  if (Error E = parseNewTensor(
          "a tensor name such as '%x'", "':' after the tensor name",
          [&](StringRef N) { return G.lookupTensor(N) != NoId; }, Name, T))
    return E;
  if (IsWeight)
    G.addWeight(Name, std::move(T));
  else
    G.addInput(Name, std::move(T));
  return Error::success();
}

Error Parser::parseOp(Graph &G) {
  // op @name = [domain::]Type(operands) -> (results) {attrs} [annots] loc("")
  std::string Name;
  if (Error E = parseNewName(
          TokKind::OpName, "an op name such as '@conv1'",
          [&](StringRef N) { return G.lookupOp(N) != NoId; }, Name))
    return E;
  if (Error E = expect(TokKind::Equal, "'=' after the op name"))
    return E;
  std::string Domain, Type;
  if (Error E = parseIdentifier(Type, "an op type"))
    return E;
  if (consumeIf(TokKind::ColonColon)) {
    Domain = std::move(Type);
    if (Error E = parseIdentifier(Type, "an op type after '::'"))
      return E;
  }

  if (Error E = expect(TokKind::LParen, "'(' before the operands"))
    return E;
  SmallVector<TensorId, 4> Operands;
  if (!consumeIf(TokKind::RParen)) {
    do {
      if (isWord("none")) {
        consume();
        Operands.push_back(NoId);
        continue;
      }
      if (Tok.Kind != TokKind::TensorName)
        return errorHere("expected an operand ('%name' or 'none')");
      TensorId T = G.lookupTensor(Tok.Text);
      if (T == NoId)
        return errorHere("use of undefined tensor '%" + Tok.Text + "'");
      Operands.push_back(T);
      consume();
    } while (consumeIf(TokKind::Comma));
    if (Error E = expect(TokKind::RParen, "',' or ')' after the operands"))
      return E;
  }

  if (Error E = expect(TokKind::Arrow, "'->' before the results"))
    return E;
  if (Error E = expect(TokKind::LParen, "'(' before the results"))
    return E;
  std::vector<std::string> ResultNames;
  SmallVector<Graph::ResultSpec, 2> Results;
  std::vector<TensorType> ResultTypes;
  if (!consumeIf(TokKind::RParen)) {
    do {
      if (isWord("none")) {
        consume();
        ResultNames.emplace_back();
        ResultTypes.emplace_back();
        continue;
      }
      std::string RName;
      TensorType T;
      if (Error E = parseNewTensor(
              "a result ('%name : type' or 'none')",
              "':' after the result name",
              [&](StringRef N) {
                return G.lookupTensor(N) != NoId ||
                       llvm::is_contained(ResultNames, N);
              },
              RName, T))
        return E;
      ResultNames.push_back(std::move(RName));
      ResultTypes.push_back(std::move(T));
    } while (consumeIf(TokKind::Comma));
    if (Error E = expect(TokKind::RParen, "',' or ')' after the results"))
      return E;
  }
  for (unsigned I = 0, E = ResultNames.size(); I != E; ++I)
    Results.push_back({ResultNames[I], ResultTypes[I]});

  AttributeList Attrs, Annotations;
  if (consumeIf(TokKind::LBrace))
    if (Error E = parseAttributeList(Attrs, TokKind::RBrace))
      return E;
  if (consumeIf(TokKind::LSquare))
    if (Error E = parseAttributeList(Annotations, TokKind::RSquare))
      return E;
  OpId Id = G.addOp(Name, Domain, Type, Operands, Results, std::move(Attrs));
  G.getOp(Id).Annotations = std::move(Annotations);
  if (isWord("loc")) {
    consume();
    if (Error E = expect(TokKind::LParen, "'(' after 'loc'"))
      return E;
    if (Tok.Kind != TokKind::String)
      return errorHere("expected the source name as a string");
    G.setSourceName(Id, Tok.Text);
    consume();
    if (Error E = expect(TokKind::RParen, "')'"))
      return E;
  }
  return Error::success();
}

Error Parser::parseGraphBody(Graph &G) {
  enum { InOpsets, InDecls, InOps, InOutputs } Section = InOpsets;
  while (true) {
    if (consumeIf(TokKind::RBrace))
      return Error::success();
    if (Tok.Kind != TokKind::Word)
      return errorHere("expected 'opset', 'annotations', 'input', 'weight', "
                       "'op', 'output' or '}'");
    std::string Keyword = Tok.Text;
    const char *KeywordLoc = Tok.Loc;
    consume();
    if (Keyword == "opset") {
      if (Section != InOpsets)
        return errorAt(KeywordLoc, "'opset' lines come first");
      if (Tok.Kind != TokKind::String)
        return errorHere("expected the opset domain as a string");
      std::string Domain = Tok.Text;
      consume();
      int64_t Version;
      if (Error E = parseInt(Version))
        return E;
      for (const OpsetImport &O : G.getOpsets())
        if (O.Domain == Domain)
          return errorAt(KeywordLoc,
                         "opset \"" + Domain + "\" is imported twice");
      G.setOpset(Domain, Version);
      continue;
    }
    if (Keyword == "annotations") {
      if (Section != InOpsets || !G.getAnnotations().empty())
        return errorAt(KeywordLoc,
                       "graph 'annotations' come once, after the opsets");
      Section = InDecls;
      if (Error E = expect(TokKind::LSquare, "'['"))
        return E;
      if (Error E = parseAttributeList(G.getAnnotations(), TokKind::RSquare))
        return E;
      continue;
    }
    if (Keyword == "input" || Keyword == "weight") {
      if (Section > InDecls)
        return errorAt(KeywordLoc, "'" + Keyword + "' lines come before ops");
      Section = InDecls;
      if (Keyword == "input" && !G.getWeights().empty())
        return errorAt(KeywordLoc, "'input' lines come before 'weight' lines");
      if (Error E = parseTensorDecl(G, Keyword == "weight"))
        return E;
      continue;
    }
    if (Keyword == "op") {
      if (Section > InOps)
        return errorAt(KeywordLoc, "'op' lines come before outputs");
      Section = InOps;
      if (Error E = parseOp(G))
        return E;
      continue;
    }
    if (Keyword == "output") {
      Section = InOutputs;
      if (Tok.Kind != TokKind::TensorName)
        return errorHere("expected a tensor name such as '%y'");
      TensorId T = G.lookupTensor(Tok.Text);
      if (T == NoId)
        return errorHere("output of undefined tensor '%" + Tok.Text + "'");
      if (llvm::is_contained(G.getOutputs(), T))
        return errorHere("tensor '%" + Tok.Text + "' is an output twice");
      G.addOutput(T);
      consume();
      continue;
    }
    return errorAt(KeywordLoc, "unknown keyword '" + Keyword + "'");
  }
}

Expected<Graph> Parser::parse() {
  if (!isWord("dp.graph"))
    return errorHere("expected 'dp.graph'");
  consume();
  if (Tok.Kind != TokKind::OpName)
    return errorHere("expected the graph name such as '@main'");
  Graph G;
  G.setName(Tok.Text);
  consume();
  if (Error E = expect(TokKind::LBrace, "'{'"))
    return std::move(E);
  if (Error E = parseGraphBody(G))
    return std::move(E);
  if (Tok.Kind != TokKind::Eof)
    return errorHere("expected the end of the input after the graph");
  return std::move(G);
}

Expected<Graph> parseGraph(MemoryBufferRef Buffer) {
  Parser P(Buffer);
  return P.parse();
}

bool looksLikeGraphText(StringRef Text) {
  while (true) {
    Text = Text.ltrim();
    if (!Text.startswith("//"))
      break;
    size_t EOL = Text.find('\n');
    if (EOL == StringRef::npos)
      return false;
    Text = Text.drop_front(EOL + 1);
  }
  return Text.startswith("dp.graph") &&
         (Text.size() == 8 || !isNameChar(Text[8]));
}

} // namespace dp
