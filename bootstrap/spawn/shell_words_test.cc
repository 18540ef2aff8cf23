#include "bootstrap/spawn/shell_words.h"

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::spawn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> Split(std::string_view text) {
  absl::StatusOr<std::vector<std::string>> words = SplitShellWords(text);
  EXPECT_TRUE(words.ok()) << text << ": " << words.status();
  return words.ok() ? *words : std::vector<std::string>{"<error>"};
}

std::string SplitError(std::string_view text) {
  absl::StatusOr<std::vector<std::string>> words = SplitShellWords(text);
  if (words.ok()) return "<split without error>";
  EXPECT_EQ(words.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(words.status().message());
}

// Runs `command` with /bin/sh (popen's shell) and returns its stdout.
std::string RunShell(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  if (pipe == nullptr) return "";
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status)) << command;
  return out;
}

// What `printf '[%s]\n' words...` prints.
std::string Bracketed(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += "[" + w + "]\n";
  return out;
}

// Words that exercise every quoting rule, and some no rule cares about.
const std::vector<std::string>& TrickyWords() {
  static const auto* words = new std::vector<std::string>{
      "plain",
      "",
      " ",
      "a b",
      "  two  ",
      "it's",
      "'",
      "''",
      "'\\''",
      "\"",
      "\"\"",
      "say \"hi\"",
      "$HOME",
      "${X:-y}",
      "$(id)",
      "`id`",
      "\\",
      "\\\\",
      "end\\",
      "\\'",
      "a\nb",
      "\n",
      "\t",
      "tab\there",
      "\r\n",
      "\xc3\xa9t\xc3\xa9",
      "\xff\xfe",
      "\x01\x7f",
      "*",
      "?",
      "[a]",
      "~",
      "~root",
      "#comment",
      "a#b",
      "!",
      "!!",
      "{}",
      "{a,b}",
      "a;b",
      "a|b",
      "&",
      "<>",
      "()",
      "-n",
      "--",
      "-e",
      "%s",
      "%+,-",
      "A=1",
      "if",
      "x=$y",
      "/path/to.file",
      "u@h:1",
      "--opt=val",
      "a\\nb",
      "\\\n",
      "\"'\"'",
  };
  return *words;
}

TEST(SplitShellWordsTest, WhitespaceSeparates) {
  EXPECT_THAT(Split("a b\tc\nd"), ElementsAre("a", "b", "c", "d"));
  EXPECT_THAT(Split("  lead  and trail \n"),
              ElementsAre("lead", "and", "trail"));
  EXPECT_THAT(Split(""), IsEmpty());
  EXPECT_THAT(Split(" \t\n "), IsEmpty());
}

TEST(SplitShellWordsTest, SingleQuotesAreLiteral) {
  EXPECT_THAT(Split("'a b' 'c\\d' '$x' '\"'"),
              ElementsAre("a b", "c\\d", "$x", "\""));
  EXPECT_THAT(Split("'it'\\''s'"), ElementsAre("it's"));
}

TEST(SplitShellWordsTest, DoubleQuotesHonourOnlyTheirEscapes) {
  EXPECT_THAT(Split(R"("a \"b\" \\ \$ \` \q \n")"),
              ElementsAre("a \"b\" \\ $ ` \\q \\n"));
  EXPECT_THAT(Split("\"one\\\ntwo\""), ElementsAre("onetwo"));
  EXPECT_THAT(Split("\"multi\nline\""), ElementsAre("multi\nline"));
  EXPECT_THAT(Split("\"'\""), ElementsAre("'"));
}

TEST(SplitShellWordsTest, BackslashOutsideQuotes) {
  EXPECT_THAT(Split(R"(a\ b \' \" \\ \q)"),
              ElementsAre("a b", "'", "\"", "\\", "q"));
  // Line continuation: removed, joins the parts, makes no word by itself.
  EXPECT_THAT(Split("one\\\ntwo"), ElementsAre("onetwo"));
  EXPECT_THAT(Split("a \\\n b"), ElementsAre("a", "b"));
  EXPECT_THAT(Split("\\\n"), IsEmpty());
}

TEST(SplitShellWordsTest, QuotedPartsJoinAndEmptyQuotesMakeWords) {
  EXPECT_THAT(Split(R"("a"'b'c\ d)"), ElementsAre("abc d"));
  EXPECT_THAT(Split(R"("" '' x"")"), ElementsAre("", "", "x"));
  EXPECT_THAT(Split("-o 'ProxyCommand ssh -W %h:%p gw' -v"),
              ElementsAre("-o", "ProxyCommand ssh -W %h:%p gw", "-v"));
}

TEST(SplitShellWordsTest, OperatorsAndExpansionsAreOrdinary) {
  EXPECT_THAT(Split("a;b $X `y` * #c"),
              ElementsAre("a;b", "$X", "`y`", "*", "#c"));
}

TEST(SplitShellWordsTest, ErrorsSayWhatAndWhere) {
  EXPECT_EQ(SplitError("ab 'cd"),
            "unterminated single quote: the ' at offset 3 is never closed");
  EXPECT_EQ(SplitError("x \"a\\\""),
            "unterminated double quote: the \" at offset 2 is never closed");
  EXPECT_EQ(SplitError("abc\\"),
            "trailing backslash at offset 3 escapes "
            "nothing");
  // A backslash inside an open double quote does not close it.
  EXPECT_THAT(SplitError("\"abc\\"), HasSubstr("unterminated double quote"));
  EXPECT_THAT(SplitError("'"), HasSubstr("offset 0"));
}

TEST(ShellQuoteTest, SafeWordsStayBare) {
  for (const char* bare :
       {"plain", "a-b_c.d/e:f=g@h%i+j,k", "-n", "--x=1", "/usr/bin/env", "0"}) {
    EXPECT_EQ(ShellQuote(bare), bare);
  }
}

TEST(ShellQuoteTest, OthersAreSingleQuoted) {
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote("'"), "''\\'''");
  EXPECT_EQ(ShellQuote("$HOME"), "'$HOME'");
  EXPECT_EQ(ShellQuote("~"), "'~'");
  EXPECT_EQ(ShellQuote("a\nb"), "'a\nb'");
  EXPECT_EQ(ShellQuote("\xc3\xa9"), "'\xc3\xa9'");
}

TEST(ShellJoinTest, SpacesBetweenQuotedWords) {
  EXPECT_EQ(ShellJoin({}), "");
  EXPECT_EQ(ShellJoin({"echo", "a b", "", "c"}), "echo 'a b' '' c");
  // Assignments and reserved words are quoted only where sh would treat
  // them specially: the command position.
  EXPECT_EQ(ShellJoin({"A=1", "B=2"}), "'A=1' B=2");
  EXPECT_EQ(ShellJoin({"if", "then"}), "'if' then");
  EXPECT_EQ(ShellJoin({"=x", "1A=b"}), "=x 1A=b");
  EXPECT_EQ(ShellJoin({"1A=b"}), "1A=b");
}

TEST(ShellWordsRoundTripTest, SplitUndoesJoin) {
  const std::vector<std::string>& words = TrickyWords();
  EXPECT_EQ(Split(ShellJoin(words)), words);
  // Each word alone, and each word in first position.
  for (const std::string& w : words) {
    EXPECT_THAT(Split(ShellJoin({w})), ElementsAre(w)) << ShellJoin({w});
    EXPECT_THAT(Split(ShellJoin({w, "x"})), ElementsAre(w, "x"));
    EXPECT_THAT(Split(ShellQuote(w)), ElementsAre(w)) << ShellQuote(w);
  }
}

TEST(ShellWordsRoundTripTest, ShAgreesWithJoin) {
  // sh itself runs the joined command line and prints each argument.
  std::vector<std::string> command = {"printf", "[%s]\\n"};
  command.insert(command.end(), TrickyWords().begin(), TrickyWords().end());
  EXPECT_EQ(RunShell(ShellJoin(command)), Bracketed(TrickyWords()));

  // A few words on their own, through the -c form the ssh spawner uses.
  for (const std::vector<std::string>& words :
       std::vector<std::vector<std::string>>{
           {"it's", "a b"}, {"", "$(false)"}, {"\\", "\n", "`id`"}}) {
    const std::string inner = "printf '[%s]\\n' " + ShellJoin(words);
    EXPECT_EQ(RunShell("/bin/sh -c " + ShellQuote(inner)), Bracketed(words))
        << inner;
  }
}

TEST(ShellWordsRoundTripTest, ShAgreesWithSplit) {
  // Texts whose words sh prints without expanding anything.
  for (const char* text : {
           R"(a\ b "c\"d" 'e\f' "g\\h" "\$x" "\q" x\$y "")",
           "one\\\ntwo \"multi\nline\" 'it'\\''s'",
           "  lead   trail  ",
           R"("a"'b'c "\`" '\' \\)",
           "a\"\\\n\"b",
           "-n -- x=1 %s",
       }) {
    const std::vector<std::string> words = Split(text);
    EXPECT_EQ(RunShell(std::string("printf '[%s]\\n' ") + text),
              Bracketed(words))
        << text;
  }
}

TEST(ShellWordsRoundTripTest, ShRunsSpecialFirstWordsAsCommands) {
  // Unquoted, sh would assign A=1 (status 0) or fail to parse "if"
  // (status 2); quoted, each is a command that does not exist (127).
  for (const char* first : {"A=1", "if", "while"}) {
    EXPECT_EQ(RunShell(ShellJoin({first}) + " 2>/dev/null; echo $?"), "127\n")
        << first;
  }
}

}  // namespace
}  // namespace gexrt::spawn
