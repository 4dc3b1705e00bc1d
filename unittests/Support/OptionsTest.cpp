//===- OptionsTest.cpp - Tests for the option tables ----------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Support/Options.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace dp;
using namespace llvm;

namespace {

enum class Colour { Red, Green };
constexpr EnumEntry<Colour> ColourNames[] = {{"red", Colour::Red},
                                             {"green", Colour::Green}};

struct Settings {
  bool Fast = false;
  std::string File;
  unsigned Count = 4;
  double Seconds = 1;
  Colour Paint = Colour::Red;
  std::vector<std::string> Tags;
};

bool isPositive(double X) { return X > 0 && std::isfinite(X); }

OptionTable describe(Settings &S) {
  OptionTable T("tool");
  T.flag("fast", S.Fast)
      .text("file", S.File, "FILE")
      .integer("count", S.Count, 1u, 100u)
      .number("seconds", S.Seconds, "S", "a positive number of seconds",
              isPositive)
      .choice<Colour>("paint", S.Paint, ColourNames)
      .custom(
          "tag", "NAME",
          [&S](StringRef V) -> Error {
            if (V.empty() || V.contains(':'))
              return make_error<StringError>("tag takes a name, not '" + V +
                                                 "'",
                                             inconvertibleErrorCode());
            S.Tags.push_back(V.str());
            return Error::success();
          },
          [&S] { return S.Tags; })
      .repeatable()
      .check([&S](const OptionTable &T) -> Error {
        if (T.wasGiven("fast") && S.File.empty())
          return T.makeError("fast= needs file=");
        return Error::success();
      });
  return T;
}

using KVs = std::vector<std::pair<std::string, std::string>>;

std::string errorOf(const KVs &Options) {
  Expected<Settings> S = parsePassOptions<Settings>(Options, describe);
  if (S)
    return "";
  return toString(S.takeError());
}

std::string printed(const KVs &Options) {
  Expected<Settings> S = parsePassOptions<Settings>(Options, describe);
  if (!S)
    return toString(S.takeError());
  std::string Text;
  raw_string_ostream OS(Text);
  printPassOptions(OS, "tool", *S, describe);
  return OS.str();
}

TEST(OptionsTest, ParsesEveryKind) {
  Expected<Settings> S = parsePassOptions<Settings>(KVs{{"file", "a.json"},
                                                        {"fast", "true"},
                                                        {"count", "7"},
                                                        {"seconds", "2.5"},
                                                        {"paint", "green"},
                                                        {"tag", "x"},
                                                        {"tag", "y"}},
                                                    describe);
  ASSERT_TRUE(bool(S)) << toString(S.takeError());
  EXPECT_TRUE(S->Fast);
  EXPECT_EQ(S->File, "a.json");
  EXPECT_EQ(S->Count, 7u);
  EXPECT_EQ(S->Seconds, 2.5);
  EXPECT_EQ(S->Paint, Colour::Green);
  EXPECT_EQ(S->Tags, (std::vector<std::string>{"x", "y"}));
}

TEST(OptionsTest, ErrorsNameTheOptionAndWhatItTakes) {
  EXPECT_EQ(errorOf({{"fast", "yes"}}),
            "error: tool: fast must be true or false, not 'yes'");
  EXPECT_EQ(errorOf({{"count", "0"}}),
            "error: tool: count must be an integer from 1 to 100, not '0'");
  EXPECT_EQ(errorOf({{"count", "101"}}),
            "error: tool: count must be an integer from 1 to 100, not '101'");
  EXPECT_EQ(errorOf({{"count", "-3"}}),
            "error: tool: count must be an integer from 1 to 100, not '-3'");
  EXPECT_EQ(errorOf({{"seconds", "inf"}}),
            "error: tool: seconds must be a positive number of seconds, not "
            "'inf'");
  EXPECT_EQ(errorOf({{"paint", "blue"}}),
            "error: tool: paint must be red or green, not 'blue'");
  EXPECT_EQ(errorOf({{"tag", "a:b"}}),
            "error: tool: tag takes a name, not 'a:b'");
  EXPECT_EQ(errorOf({{"colour", "red"}}),
            "error: tool: unknown option 'colour' (expected fast=true|false, "
            "file=FILE, count=N, seconds=S, paint=red|green or tag=NAME)");
  EXPECT_EQ(errorOf({{"count", "2"}, {"count", "3"}}),
            "error: tool: count= is given twice");
  EXPECT_EQ(errorOf({{"fast", "true"}}), "error: tool: fast= needs file=");
  EXPECT_EQ(errorOf({{"tag", "a"}, {"tag", "b"}}), "");
}

TEST(OptionsTest, PrintsWhatDiffersFromTheDefaultsAndParsesBack) {
  EXPECT_EQ(printed({}), "tool");
  EXPECT_EQ(printed({{"count", "4"}, {"paint", "red"}}), "tool");
  EXPECT_EQ(printed({{"tag", "b"}, {"seconds", "0.5"}, {"tag", "a"}}),
            "tool{seconds=0.5,tag=b,tag=a}");
  EXPECT_EQ(printed({{"paint", "green"}, {"file", "f"}, {"fast", "true"}}),
            "tool{fast=true,file=f,paint=green}");
}

TEST(OptionsTest, UsageListsEveryOption) {
  Settings S;
  EXPECT_EQ(describe(S).getUsage(), "fast=true|false,file=FILE,count=N,"
                                    "seconds=S,paint=red|green,tag=NAME");
}

TEST(OptionsTest, DefaultsListOptionsThatHaveOne) {
  // file= and tag= are unset by default: no default to show.
  Settings S;
  EXPECT_EQ(getPassOptionDefaults<Settings>(describe),
            "fast=false,count=4,seconds=1.0,paint=red");
  // A number below its minimum, or one its check refuses, is "unset".
  S.Count = 0;
  S.Seconds = 0;
  EXPECT_EQ(describe(S).getDefaults(), "fast=false,paint=red");
}

TEST(OptionsTest, OtherKeysGoToTheirHandler) {
  std::vector<std::string> Seen;
  OptionTable T("pass");
  unsigned N = 1;
  T.integer("n", N).otherKeys("...", [&](StringRef K, StringRef V) {
    Seen.push_back((K + "=" + V).str());
    return Error::success();
  });
  ASSERT_FALSE(bool(T.parse(KVs{{"a", "1"}, {"n", "5"}, {"b", "2"}})));
  EXPECT_EQ(N, 5u);
  EXPECT_EQ(Seen, (std::vector<std::string>{"a=1", "b=2"}));
  EXPECT_EQ(T.getUsage(), "n=N,...");
}

TEST(OptionsTest, SplitsNestedLists) {
  auto L = splitOptionList("who", " a = 1 ,b=2");
  ASSERT_TRUE(bool(L));
  EXPECT_EQ(*L, (KVs{{"a", "1"}, {"b", "2"}}));
  EXPECT_TRUE(splitOptionList("who", " ")->empty());
  Expected<KVs> Bad = splitOptionList("who", "a=1,b");
  ASSERT_FALSE(bool(Bad));
  EXPECT_EQ(toString(OptionError::toLocated(Bad.takeError())),
            "error: who: expected key=value, not 'b'");
}

} // namespace
