//===- dp/Support/Options.h - A pass's options, declared once ---*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The `key=value` options of a pass (or of a strategy inside one), declared
/// once as a table bound to the fields of an options struct:
///
///   static OptionTable describe(CostOptions &O) {
///     OptionTable T("cost-annotate");
///     T.choice("source", O.Source, CostSourceNames)
///         .text("profile", O.ProfilePath, "FILE")
///         .integer("runs", O.Runs, 1u, 1000u);
///     return T;
///   }
///
/// The same table parses (with one wording for every pass's errors:
/// "cost-annotate: runs must be an integer from 1 to 1000, not '0'",
/// "... unknown option 'speed' (expected source=roofline|onednn, ...)",
/// "... runs= is given twice"), prints the options that differ from their
/// defaults in the canonical `{key=value,...}` form that parses back
/// (-print-pipeline), and lists `key=META,...` for -print-passes.
///
//===----------------------------------------------------------------------===//

#ifndef DP_SUPPORT_OPTIONS_H
#define DP_SUPPORT_OPTIONS_H

#include "dp/Support/Diagnostics.h"
#include "dp/Support/EnumNames.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace dp {

/// An error that already says whose option it is (OptionTable::makeError):
/// a table passes it on without prefixing it again. What leaves
/// parsePassOptions is the usual located error (dp/Support/Diagnostics.h).
class OptionError : public llvm::ErrorInfo<OptionError> {
public:
  static char ID;
  explicit OptionError(std::string Message) : Message(std::move(Message)) {}
  /// \p E with its OptionErrors made plain errors of the same message.
  static llvm::Error toLocated(llvm::Error E);
  void log(llvm::raw_ostream &OS) const override { OS << Message; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }

private:
  std::string Message;
};

/// Pipeline options as the pass builder hands them over, in given order.
using OptionList = llvm::ArrayRef<std::pair<std::string, std::string>>;

class OptionTable {
public:
  /// \p Who starts every error ("cost-annotate", "colocate{strategy=merge}").
  explicit OptionTable(std::string Who) : Who(std::move(Who)) {}

  llvm::StringRef getWho() const { return Who; }

  /// key=true|false.
  OptionTable &flag(llvm::StringRef Key, bool &Value);
  /// key=META: any text (a file, a directory, a name).
  OptionTable &text(llvm::StringRef Key, std::string &Value,
                    llvm::StringRef Meta);
  /// key=N with Min <= N <= Max. The error says "a positive integer" (or
  /// "a non-negative integer") when Min is 1 (0) and Max at least 2^31 - 1,
  /// else "an integer from Min to Max".
  template <typename IntT>
  OptionTable &integer(llvm::StringRef Key, IntT &Value, IntT Min = 1,
                       IntT Max = std::numeric_limits<IntT>::max(),
                       llvm::StringRef Meta = "N");
  /// key=auto|N with 1 <= N <= Max; \p Value 0 stands for auto.
  template <typename IntT>
  OptionTable &autoInteger(llvm::StringRef Key, IntT &Value,
                           IntT Max = std::numeric_limits<IntT>::max());
  /// key=META, a number that \p Valid accepts; \p Expected says which
  /// ("a positive number of seconds").
  OptionTable &number(llvm::StringRef Key, double &Value, llvm::StringRef Meta,
                      llvm::StringRef Expected, bool (*Valid)(double));
  /// The same for a number that is unset by default (printed when set).
  OptionTable &number(llvm::StringRef Key, llvm::Optional<double> &Value,
                      llvm::StringRef Meta, llvm::StringRef Expected,
                      bool (*Valid)(double));
  /// key=NAME, one of \p Names.
  template <typename E>
  OptionTable &choice(llvm::StringRef Key, E &Value,
                      llvm::ArrayRef<EnumEntry<E>> Names);
  /// The values an option prints, one "key=value" each (none: it is not
  /// printed).
  using PrintFn = std::function<std::vector<std::string>()>;
  /// key=META read by \p Parse, whose error message (dp::makeError) the
  /// table prefixes with "<who>: " (an OptionError, made by a table, stays
  /// as it is); \p Print gives the values back.
  OptionTable &custom(llvm::StringRef Key, llvm::StringRef Meta,
                      std::function<llvm::Error(llvm::StringRef)> Parse,
                      PrintFn Print);
  /// The option added last may be given more than once.
  OptionTable &repeatable();
  /// The option added last is printed even at its default value.
  OptionTable &printAlways();
  /// Keys the table does not declare go to \p Handler instead of being an
  /// error (a pass that passes options on, like place{algo=...});
  /// \p Usage ends the usage ("...", "FORMAT=FILE").
  OptionTable &otherKeys(
      llvm::StringRef Usage,
      std::function<llvm::Error(llvm::StringRef, llvm::StringRef)> Handler);

  /// A check of the options together, run after each parse() (an option
  /// that needs another); \p Check gets the table, for wasGiven().
  OptionTable &check(std::function<llvm::Error(const OptionTable &)> Check);

  /// Parses \p Options into the bound fields.
  llvm::Error parse(OptionList Options);
  /// Whether the last parse() was given \p Key.
  bool wasGiven(llvm::StringRef Key) const;

  /// "key=META,key=META" in declaration order.
  std::string getUsage() const;
  /// "key=value,key=value": the value each option has when not given, for
  /// the options that have one (an option unset by default has none).
  std::string getDefaults() const;
  /// "key: EXPECTED; key: EXPECTED" for the options whose meta does not
  /// say what they take (integers and numbers: "lp-limit: a positive
  /// integer; threshold: a number in [0, 1]"), for -print-passes.
  std::string getRanges() const;
  /// "key=META, key=META or key=META": what an unknown option's error
  /// says was expected.
  std::string getExpected() const;
  /// Writes "{key=value,...}" with the options whose printed value differs
  /// from that of \p Defaults (the same table bound to default options) or
  /// that print always, in declaration order; nothing when there are none.
  void printChanged(llvm::raw_ostream &OS, const OptionTable &Defaults) const;

  /// An error "<who>: <Message>" (an OptionError).
  llvm::Error makeError(const llvm::Twine &Message) const;

private:
  struct Entry {
    std::string Key;
    std::string Meta;
    std::function<llvm::Error(llvm::StringRef)> Parse;
    PrintFn Print;
    /// What a value must be, for getRanges; empty where Meta says it.
    std::string Expected;
    bool Repeatable = false;
    bool Always = false;
  };
  OptionTable &add(llvm::StringRef Key, llvm::StringRef Meta,
                   std::function<llvm::Error(llvm::StringRef)> Parse,
                   PrintFn Print, llvm::StringRef Expected = "");
  /// "<key> must be <Expected>, not '<Value>'".
  static llvm::Error mustBe(llvm::StringRef Key, const llvm::Twine &Expected,
                            llvm::StringRef Value);
  /// Reads \p S into \p V: a number \p Valid accepts, else mustBe's error.
  static llvm::Error parseNumber(llvm::StringRef Key, llvm::StringRef Expected,
                                 bool (*Valid)(double), llvm::StringRef S,
                                 double &V);
  static bool parseInteger(llvm::StringRef S, int64_t Min, uint64_t Max,
                           uint64_t &N);
  static std::string describeRange(int64_t Min, uint64_t Max);

  std::string Who;
  std::vector<Entry> Entries;
  std::vector<std::string> Given;
  std::function<llvm::Error(llvm::StringRef, llvm::StringRef)> Others;
  std::string OthersUsage;
  std::vector<std::function<llvm::Error(const OptionTable &)>> Checks;
};

/// Splits "key=value,key=value" (the inside of a nested `{...}`) into an
/// option list; "<who>: expected key=value, not 'x'" for an item without
/// one.
llvm::Expected<std::vector<std::pair<std::string, std::string>>>
splitOptionList(llvm::StringRef Who, llvm::StringRef Text);

/// The three uses of a pass's table, for a pass whose options struct
/// \p OptionsT is described by \p Describe (it binds a table to a struct).
template <typename OptionsT>
using DescribeOptions = OptionTable (*)(OptionsT &);

/// Parses \p Options into default-constructed options.
template <typename OptionsT>
llvm::Expected<OptionsT> parsePassOptions(OptionList Options,
                                          DescribeOptions<OptionsT> Describe) {
  OptionsT O;
  if (llvm::Error E = Describe(O).parse(Options))
    return OptionError::toLocated(std::move(E));
  return O;
}

/// Writes "name{key=value,...}" with the options that differ from the
/// defaults.
template <typename OptionsT>
void printPassOptions(llvm::raw_ostream &OS, llvm::StringRef Name,
                      const OptionsT &Options,
                      DescribeOptions<OptionsT> Describe) {
  OptionsT Copy = Options, Defaults;
  OS << Name;
  Describe(Copy).printChanged(OS, Describe(Defaults));
}

/// "key=META,..." for -print-passes.
template <typename OptionsT>
std::string getPassOptionUsage(DescribeOptions<OptionsT> Describe) {
  OptionsT O;
  return Describe(O).getUsage();
}

/// "key=value,..." of the defaults, for -print-passes.
template <typename OptionsT>
std::string getPassOptionDefaults(DescribeOptions<OptionsT> Describe) {
  OptionsT O;
  return Describe(O).getDefaults();
}

template <typename IntT>
OptionTable &OptionTable::integer(llvm::StringRef Key, IntT &Value, IntT Min,
                                  IntT Max, llvm::StringRef Meta) {
  static_assert(std::is_integral<IntT>::value, "an integer option");
  std::string K = Key.str(), X = describeRange(int64_t(Min), uint64_t(Max));
  return add(
      Key, Meta,
      [&Value, K, X, Min, Max](llvm::StringRef S) -> llvm::Error {
        uint64_t N;
        if (!parseInteger(S, int64_t(Min), uint64_t(Max), N))
          return mustBe(K, X, S);
        Value = IntT(N);
        return llvm::Error::success();
      },
      // A value below Min is the unset default ("no limit"): it has no text.
      [&Value, Min] {
        return Value < Min ? std::vector<std::string>()
                           : std::vector<std::string>{std::to_string(Value)};
      },
      X);
}

template <typename IntT>
OptionTable &OptionTable::autoInteger(llvm::StringRef Key, IntT &Value,
                                      IntT Max) {
  static_assert(std::is_integral<IntT>::value, "an integer option");
  std::string K = Key.str(), X = "auto or " + describeRange(1, uint64_t(Max));
  return add(
      Key, "auto|N",
      [&Value, K, X, Max](llvm::StringRef S) -> llvm::Error {
        uint64_t N = 0;
        if (S != "auto" && !parseInteger(S, 1, uint64_t(Max), N))
          return mustBe(K, X, S);
        Value = IntT(N);
        return llvm::Error::success();
      },
      [&Value] {
        return std::vector<std::string>{Value ? std::to_string(Value)
                                              : std::string("auto")};
      },
      X);
}

template <typename E>
OptionTable &OptionTable::choice(llvm::StringRef Key, E &Value,
                                 llvm::ArrayRef<EnumEntry<E>> Names) {
  std::string K = Key.str();
  return add(
      Key, listEnumNames(Names, "|"),
      [&Value, K, Names](llvm::StringRef S) -> llvm::Error {
        llvm::Optional<E> V = parseEnumName(Names, S);
        if (!V)
          return mustBe(K, listEnumNames(Names), S);
        Value = *V;
        return llvm::Error::success();
      },
      [&Value, Names] {
        return std::vector<std::string>{getEnumName(Names, Value).str()};
      });
}

/// Declares a repeatable option \p Key=NAME:X, kept in
/// \p Named: \p Parse reads X (None: "<Key> takes <Meta> with <Takes>,
/// not '...'"), \p Print writes it back; with \p Once, a second X for one
/// name is an error ("<Key>= is given twice for input '<NAME>'").
template <typename T>
void addNamedOption(OptionTable &Table, llvm::StringRef Key,
                    llvm::StringRef Meta, llvm::StringRef Takes,
                    std::vector<std::pair<std::string, T>> &Named, bool Once,
                    std::function<llvm::Optional<T>(llvm::StringRef)> Parse,
                    std::function<std::string(const T &)> Print) {
  std::string K = Key.str(), Syntax = (Meta + " with " + Takes).str();
  Table
      .custom(
          Key, Meta,
          [=, &Named](llvm::StringRef Value) -> llvm::Error {
            auto [Name, Text] = Value.rsplit(':');
            llvm::Optional<T> X =
                Name.empty() || Text.empty() ? llvm::None : Parse(Text);
            if (!X)
              return makeError(K + " takes " + Syntax + ", not '" + Value +
                               "'");
            if (Once)
              for (const auto &Entry : Named)
                if (Entry.first == Name)
                  return makeError(K + "= is given twice for input '" + Name +
                                   "'");
            Named.emplace_back(Name.str(), std::move(*X));
            return llvm::Error::success();
          },
          [&Named, Print] {
            std::vector<std::string> V;
            for (const auto &[Name, X] : Named)
              V.push_back(Name + ":" + Print(X));
            return V;
          })
      .repeatable();
}

} // namespace dp

#endif // DP_SUPPORT_OPTIONS_H
