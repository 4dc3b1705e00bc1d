//===- FileOutputTest.cpp - Atomic output files and transactions ----------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Support/FileOutput.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace dp;
using namespace llvm;

namespace {

/// A fresh directory, removed with everything in it at the end.
class FileOutputTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(sys::fs::createUniqueDirectory("dp-fileoutput", Dir));
  }
  void TearDown() override { sys::fs::remove_directories(Dir); }

  std::string path(StringRef Name) const {
    SmallString<128> P(Dir);
    sys::path::append(P, Name);
    return std::string(P);
  }
  /// The content of \p Name, or "<missing>".
  std::string read(StringRef Name) const {
    auto Buf = MemoryBuffer::getFile(path(Name));
    return Buf ? (*Buf)->getBuffer().str() : "<missing>";
  }
  /// The names in the directory, sorted.
  std::vector<std::string> list() const {
    std::vector<std::string> Names;
    std::error_code EC;
    for (sys::fs::directory_iterator I(Dir, EC), E; I != E && !EC;
         I.increment(EC))
      Names.push_back(sys::path::filename(I->path()).str());
    llvm::sort(Names);
    return Names;
  }
  Error write(StringRef Name, StringRef Text) {
    return writeFileAtomically(path(Name),
                               [&](raw_ostream &OS) { OS << Text; });
  }

  SmallString<128> Dir;
};

TEST_F(FileOutputTest, WritesAtOnceOutsideATransaction) {
  ASSERT_FALSE(bool(write("a.txt", "one")));
  EXPECT_EQ(read("a.txt"), "one");
  ASSERT_FALSE(bool(write("a.txt", "two")));
  EXPECT_EQ(read("a.txt"), "two");
  EXPECT_EQ(list(), std::vector<std::string>{"a.txt"});
}

TEST_F(FileOutputTest, ACommittedTransactionPutsEveryFileInPlace) {
  ASSERT_FALSE(bool(write("a.txt", "old")));
  OutputTransaction T;
  ASSERT_FALSE(bool(write("a.txt", "new")));
  ASSERT_FALSE(bool(write("b.txt", "b")));
  EXPECT_EQ(read("a.txt"), "old");
  EXPECT_EQ(read("b.txt"), "<missing>");
  ASSERT_FALSE(bool(T.commit()));
  EXPECT_EQ(read("a.txt"), "new");
  EXPECT_EQ(read("b.txt"), "b");
  EXPECT_EQ(list(), (std::vector<std::string>{"a.txt", "b.txt"}));
  EXPECT_EQ(OutputTransaction::getCurrent(), nullptr);
}

TEST_F(FileOutputTest, AnUncommittedTransactionTouchesNoFile) {
  ASSERT_FALSE(bool(write("a.txt", "old")));
  {
    OutputTransaction T;
    ASSERT_FALSE(bool(write("a.txt", "new")));
    ASSERT_FALSE(bool(write("b.txt", "b")));
    EXPECT_EQ(list().size(), 3u); // a.txt and two temporaries.
  }
  EXPECT_EQ(read("a.txt"), "old");
  EXPECT_EQ(list(), std::vector<std::string>{"a.txt"});
  EXPECT_EQ(OutputTransaction::getCurrent(), nullptr);
}

TEST_F(FileOutputTest, AFileWrittenTwiceKeepsItsLastContent) {
  OutputTransaction T;
  ASSERT_FALSE(bool(write("a.txt", "first")));
  ASSERT_FALSE(bool(write("a.txt", "second")));
  EXPECT_EQ(list().size(), 1u); // One temporary.
  ASSERT_FALSE(bool(T.commit()));
  EXPECT_EQ(read("a.txt"), "second");
  EXPECT_EQ(list(), std::vector<std::string>{"a.txt"});
}

TEST_F(FileOutputTest, AFileThatCannotBeCreatedFailsAtOnce) {
  OutputTransaction T;
  Error E = write("no/such/dir/a.txt", "x");
  ASSERT_TRUE(bool(E));
  EXPECT_NE(toString(std::move(E)).find("cannot create the output"),
            std::string::npos);
  ASSERT_FALSE(bool(T.commit()));
  EXPECT_TRUE(list().empty());
}

TEST_F(FileOutputTest, ASymbolicLinkStaysALinkToTheNewContent) {
  ASSERT_FALSE(bool(write("target.txt", "old")));
  ASSERT_FALSE(sys::fs::create_link(path("target.txt"), path("link.txt")));
  ASSERT_FALSE(bool(write("link.txt", "new")));
  EXPECT_TRUE(sys::fs::is_symlink_file(path("link.txt")));
  EXPECT_EQ(read("target.txt"), "new");
}

TEST_F(FileOutputTest, DevNullIsWrittenInPlace) {
  OutputTransaction T;
  ASSERT_FALSE(bool(writeFileAtomically(
      "/dev/null", [](raw_ostream &OS) { OS << "discarded"; })));
  ASSERT_FALSE(bool(T.commit()));
  sys::fs::file_status Status;
  ASSERT_FALSE(sys::fs::status("/dev/null", Status));
  EXPECT_EQ(Status.type(), sys::fs::file_type::character_file);
}

TEST_F(FileOutputTest, TransactionsNest) {
  OutputTransaction Outer;
  {
    OutputTransaction Inner;
    EXPECT_EQ(OutputTransaction::getCurrent(), &Inner);
    ASSERT_FALSE(bool(write("inner.txt", "i")));
  }
  EXPECT_EQ(OutputTransaction::getCurrent(), &Outer);
  ASSERT_FALSE(bool(write("outer.txt", "o")));
  ASSERT_FALSE(bool(Outer.commit()));
  EXPECT_EQ(list(), std::vector<std::string>{"outer.txt"});
}

} // namespace
