//===- Options.cpp - A pass's options, declared once ----------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Support/Options.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

using namespace llvm;

namespace dp {

char OptionError::ID = 0;

OptionTable &OptionTable::add(StringRef Key, StringRef Meta,
                              std::function<Error(StringRef)> Parse,
                              PrintFn Print, StringRef Expected) {
  assert(none_of(Entries, [&](const Entry &E) { return E.Key == Key; }) &&
         "an option declared twice");
  Entries.push_back({Key.str(), Meta.str(), std::move(Parse), std::move(Print),
                     Expected.str(), false, false});
  return *this;
}

Error OptionTable::mustBe(StringRef Key, const Twine &Expected,
                          StringRef Value) {
  return dp::makeError(Key + " must be " + Expected + ", not '" + Value + "'");
}

bool OptionTable::parseInteger(StringRef S, int64_t Min, uint64_t Max,
                               uint64_t &N) {
  assert(Min >= 0 && "integer options are not negative");
  return to_integer(S, N, 10) && N >= uint64_t(Min) && N <= Max;
}

std::string OptionTable::describeRange(int64_t Min, uint64_t Max) {
  if (Max >= uint64_t(std::numeric_limits<int32_t>::max()) && Min <= 1)
    return Min ? "a positive integer" : "a non-negative integer";
  return ("an integer from " + Twine(Min) + " to " + Twine(Max)).str();
}

OptionTable &OptionTable::flag(StringRef Key, bool &Value) {
  std::string K = Key.str();
  return add(
      Key, "true|false",
      [&Value, K](StringRef S) -> Error {
        if (S != "true" && S != "false")
          return mustBe(K, "true or false", S);
        Value = S == "true";
        return Error::success();
      },
      [&Value] { return std::vector<std::string>{Value ? "true" : "false"}; });
}

OptionTable &OptionTable::text(StringRef Key, std::string &Value,
                               StringRef Meta) {
  return add(
      Key, Meta,
      [&Value](StringRef S) {
        Value = S.str();
        return Error::success();
      },
      [&Value] {
        return Value.empty() ? std::vector<std::string>{}
                             : std::vector<std::string>{Value};
      });
}

/// The printed form of a number option's value.
static std::vector<std::string> printNumber(double V) {
  std::string S;
  raw_string_ostream OS(S);
  writeDouble(OS, V);
  return {OS.str()};
}

Error OptionTable::parseNumber(StringRef Key, StringRef Expected,
                               bool (*Valid)(double), StringRef S, double &V) {
  if (!parseDouble(S, V) || !Valid(V))
    return mustBe(Key, Expected, S);
  return Error::success();
}

OptionTable &OptionTable::number(StringRef Key, double &Value, StringRef Meta,
                                 StringRef Expected, bool (*Valid)(double)) {
  std::string K = Key.str(), X = Expected.str();
  return add(
      Key, Meta,
      [&Value, K, X, Valid](StringRef S) {
        return parseNumber(K, X, Valid, S, Value);
      },
      // A value Valid refuses is the unset default ("the placer's"): it
      // has no text.
      [&Value, Valid] {
        return Valid(Value) ? printNumber(Value) : std::vector<std::string>();
      },
      X);
}

OptionTable &OptionTable::number(StringRef Key, Optional<double> &Value,
                                 StringRef Meta, StringRef Expected,
                                 bool (*Valid)(double)) {
  std::string K = Key.str(), X = Expected.str();
  return add(
      Key, Meta,
      [&Value, K, X, Valid](StringRef S) -> Error {
        double V;
        if (Error E = parseNumber(K, X, Valid, S, V))
          return E;
        Value = V;
        return Error::success();
      },
      [&Value] {
        return Value ? printNumber(*Value) : std::vector<std::string>();
      },
      X);
}

OptionTable &OptionTable::custom(StringRef Key, StringRef Meta,
                                 std::function<Error(StringRef)> Parse,
                                 PrintFn Print) {
  return add(Key, Meta, std::move(Parse), std::move(Print));
}

OptionTable &OptionTable::repeatable() {
  assert(!Entries.empty() && "no option to make repeatable");
  Entries.back().Repeatable = true;
  return *this;
}

OptionTable &OptionTable::printAlways() {
  assert(!Entries.empty() && "no option to print always");
  Entries.back().Always = true;
  return *this;
}

OptionTable &
OptionTable::otherKeys(StringRef Usage,
                       std::function<Error(StringRef, StringRef)> Handler) {
  Others = std::move(Handler);
  OthersUsage = Usage.str();
  return *this;
}

OptionTable &
OptionTable::check(std::function<Error(const OptionTable &)> Check) {
  Checks.push_back(std::move(Check));
  return *this;
}

Error OptionTable::makeError(const Twine &Message) const {
  return make_error<OptionError>((Who + ": " + Message).str());
}

Error OptionTable::parse(OptionList Options) {
  Given.clear();
  for (const auto &[Key, Value] : Options) {
    auto It = find_if(Entries, [&](const Entry &E) { return E.Key == Key; });
    if (It == Entries.end()) {
      if (Others) {
        if (Error E = Others(Key, Value))
          return E;
        continue;
      }
      return makeError(
          "unknown option '" + Key + "' (" +
          (Entries.empty() ? "it takes none" : "expected " + getExpected()) +
          ")");
    }
    if (!It->Repeatable && is_contained(Given, Key))
      return makeError(Key + "= is given twice");
    Given.push_back(Key);
    if (Error E = It->Parse(Value))
      return handleErrors(
          std::move(E),
          [](std::unique_ptr<OptionError> Own) {
            return Error(std::move(Own));
          },
          [&](const LocatedError &L) { return makeError(L.getMessage()); },
          [&](const ErrorInfoBase &B) { return makeError(B.message()); });
  }
  for (const auto &Check : Checks)
    if (Error E = Check(*this))
      return E;
  return Error::success();
}

bool OptionTable::wasGiven(StringRef Key) const {
  return is_contained(Given, Key);
}

std::string OptionTable::getUsage() const {
  std::string S;
  for (const Entry &E : Entries)
    S += (S.empty() ? "" : ",") + E.Key + "=" + E.Meta;
  if (Others)
    S += (S.empty() ? "" : ",") + OthersUsage;
  return S;
}

std::string OptionTable::getDefaults() const {
  std::string S;
  for (const Entry &E : Entries)
    for (const std::string &V : E.Print())
      S += (S.empty() ? "" : ",") + E.Key + "=" + V;
  return S;
}

std::string OptionTable::getRanges() const {
  std::string S;
  for (const Entry &E : Entries)
    if (!E.Expected.empty())
      S += (S.empty() ? "" : "; ") + E.Key + ": " + E.Expected;
  return S;
}

std::string OptionTable::getExpected() const {
  std::vector<std::string> Items;
  for (const Entry &E : Entries)
    Items.push_back(E.Key + "=" + E.Meta);
  return formatList(Items);
}

void OptionTable::printChanged(raw_ostream &OS,
                               const OptionTable &Defaults) const {
  assert(Defaults.Entries.size() == Entries.size() && "the same table");
  ListSeparator LS(",");
  bool Any = false;
  for (size_t I = 0, N = Entries.size(); I != N; ++I) {
    const Entry &E = Entries[I];
    std::vector<std::string> Values = E.Print();
    if (!E.Always && Values == Defaults.Entries[I].Print())
      continue;
    for (const std::string &V : Values) {
      OS << (Any ? "" : "{") << LS << E.Key << '=' << V;
      Any = true;
    }
  }
  if (Any)
    OS << '}';
}

Error OptionError::toLocated(Error E) {
  return handleErrors(std::move(E), [](const OptionError &O) {
    return dp::makeError(O.Message);
  });
}

Expected<std::vector<std::pair<std::string, std::string>>>
splitOptionList(StringRef Who, StringRef Text) {
  std::vector<std::pair<std::string, std::string>> Options;
  if (Text.trim().empty())
    return Options;
  SmallVector<StringRef, 4> Items;
  Text.split(Items, ',');
  for (StringRef Item : Items) {
    auto [Key, Value] = Item.split('=');
    Key = Key.trim();
    Value = Value.trim();
    if (!Item.contains('=') || Key.empty() || Value.empty())
      return make_error<OptionError>(
          (Who + ": expected key=value, not '" + Item.trim() + "'").str());
    Options.emplace_back(Key.str(), Value.str());
  }
  return Options;
}

} // namespace dp
