// Foreign text (file names, model names, keys and values from files a pull request chose) on
// its way into a report, a terminal, a log or an emitted file: one place decodes it, and each
// output escapes it for its own syntax.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace trainledger::text {

// `s` as valid UTF-8: each byte that does not start a well-formed sequence (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF) becomes U+FFFD.
std::string valid_utf8(std::string_view s);

// `s` for a terminal, a CI log or a table cell: valid UTF-8 in which every control character
// (C0 with newline and tab, DEL, C1), the line and paragraph separators, the bidirectional
// controls (U+202A-U+202E, U+2066-U+2069) and the noncharacters U+FFFE/U+FFFF are written as
// \n, \t, \xNN or \u{XXXX}, and every invalid byte as \xNN. At most `max_chars` code points
// are kept ("…" marks a cut).
std::string printable(std::string_view s, std::size_t max_chars = 512);

// Whether `s` is already what printable() returns (nothing to escape, not cut).
bool is_printable(std::string_view s);

// `s` for XML and HTML text and attributes (SVG, JUnit, the HTML report): valid UTF-8, every
// character XML 1.0 does not allow (C0 but tab, newline and carriage return; U+FFFE, U+FFFF;
// unpaired bytes) as U+FFFD, and & < > " ' as entities (&apos; for ').
std::string xml(std::string_view s);

// `s` inside a Markdown paragraph or table cell: printable(), then the characters that start
// HTML, emphasis, links, code or a table cell (< > & * _ ` [ ] | \ # !) escaped, so a name
// shows as the text it is and never as markup.
std::string markdown(std::string_view s);

// `s` as a Markdown code span: printable(), between backtick fences longer than any run of
// backticks inside it (CommonMark 6.1), so nothing in it is markup and nothing ends the span.
std::string markdown_code(std::string_view s);

// `s` as the body of a TOML basic string ("..."): valid UTF-8 with " and \ and every control
// character escaped (\", \\, \n, \t, \uXXXX).
std::string toml_string(std::string_view s);

// `s` as one POSIX shell word: single-quoted, a ' inside as '\''; printable() first, so no
// control character reaches the script.
std::string shell_word(std::string_view s);

// `s` inside a comment line of a shell script or a TOML file: printable() (no newline can end
// the comment).
std::string comment(std::string_view s);

}  // namespace trainledger::text
