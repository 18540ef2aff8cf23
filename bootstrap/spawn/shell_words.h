// Words as a POSIX shell reads them, without any expansion.
//
// SplitShellWords reads a user's option string (GASNET_SSH_OPTIONS) into
// argv words; ShellQuote and ShellJoin write words into a command line that
// a remote /bin/sh turns back into exactly those words. The two agree:
// SplitShellWords(ShellJoin(words)) == words for any words without NUL.
//
//   SplitShellWords("-o 'Proxy Command=x' -v")  -> {"-o", "Proxy Command=x",
//                                                   "-v"}
//   ShellJoin({"echo", "it's", ""})             -> "echo 'it'\''s' ''"
#ifndef GEX_BOOTSTRAP_SPAWN_SHELL_WORDS_H_
#define GEX_BOOTSTRAP_SPAWN_SHELL_WORDS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace gexrt::spawn {

// Splits `text` into words the way sh's tokenizer does, with quote removal
// but no expansion, globbing or operators:
//  - unquoted spaces, tabs and newlines separate words;
//  - '...' is literal up to the next ';
//  - "..." is literal except that \" \\ \$ \` stand for the second
//    character and \<newline> is removed;
//  - outside quotes a backslash makes the next character literal, and
//    \<newline> is removed (a line continuation, as sh does);
//  - "" and '' make an empty word.
// $, `, ;, |, &, <, >, (, ), * and # are ordinary characters.
// Errors (InvalidArgument): an unterminated quote or a trailing backslash;
// the message says which and at what byte offset it starts.
absl::StatusOr<std::vector<std::string>> SplitShellWords(std::string_view text);

// `word` quoted for sh: unchanged when non-empty and made only of
// [A-Za-z0-9_./:=@%+,-], else in single quotes with each ' written as '\''.
// The empty word is ''.
std::string ShellQuote(std::string_view word);

// The words quoted and separated by single spaces, so that sh runs the
// first word as a command with the others as its arguments. The first word
// is also quoted when sh would otherwise read it as a variable assignment
// ("A=1") or a reserved word ("if"); in any other position those are plain
// arguments and stay bare.
std::string ShellJoin(absl::Span<const std::string> words);

}  // namespace gexrt::spawn

#endif  // GEX_BOOTSTRAP_SPAWN_SHELL_WORDS_H_
