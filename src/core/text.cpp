#include "trainledger/text.hpp"

#include <cstdint>

namespace trainledger::text {

namespace {

// The code point at s[i] and its length in bytes; length 0 when s[i] starts no well-formed
// UTF-8 sequence (RFC 3629 table 3-7).
std::size_t decode(std::string_view s, std::size_t i, std::uint32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    cp = c & 0x0f;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;  // no surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    cp = c & 0x07;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const unsigned char x = b(k);
    if (k == 1 ? (x < lo || x > hi) : (x & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (x & 0x3f);
  }
  return n;
}

void put_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

constexpr std::uint32_t k_replacement = 0xfffd;

// decode(), with a byte that starts no sequence read as U+FFFD (length 1).
std::size_t decode_or_replace(std::string_view s, std::size_t i, std::uint32_t& cp) {
  const std::size_t n = decode(s, i, cp);
  if (n > 0) return n;
  cp = k_replacement;
  return 1;
}

bool needs_escape(std::uint32_t cp) {
  return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfffe ||
         cp == 0xffff;
}

const char* const k_hex = "0123456789ABCDEF";

void hex_byte(std::string& out, unsigned char c) {
  out += "\\x";
  out += k_hex[c >> 4];
  out += k_hex[c & 15];
}

// Four hex digits of a code point below U+10000.
void hex4(std::string& out, std::uint32_t cp) {
  for (int shift = 12; shift >= 0; shift -= 4) out += k_hex[(cp >> shift) & 15];
}

void escape_cp(std::string& out, std::uint32_t cp) {
  if (cp == '\n') {
    out += "\\n";
  } else if (cp == '\t') {
    out += "\\t";
  } else if (cp == '\r') {
    out += "\\r";
  } else if (cp < 0x100) {
    hex_byte(out, static_cast<unsigned char>(cp));
  } else {
    out += "\\u{";
    hex4(out, cp);
    out += '}';
  }
}

}  // namespace

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::uint32_t cp = 0;
    const std::size_t n = decode(s, i, cp);
    if (n == 0) {
      put_utf8(out, k_replacement);
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string printable(std::string_view s, std::size_t max_chars) {
  std::string out;
  out.reserve(s.size());
  std::size_t chars = 0;
  for (std::size_t i = 0; i < s.size();) {
    if (chars == max_chars) {
      out += "…";
      break;
    }
    ++chars;
    std::uint32_t cp = 0;
    const std::size_t n = decode(s, i, cp);
    if (n == 0) {
      hex_byte(out, static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    if (needs_escape(cp))
      escape_cp(out, cp);
    else
      out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

bool is_printable(std::string_view s) { return printable(s, s.size() + 1) == s; }

std::string xml(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::uint32_t cp = 0;
    const std::size_t n = decode_or_replace(s, i, cp);
    const bool allowed =
        cp == 0x9 || cp == 0xa || cp == 0xd || (cp >= 0x20 && cp != 0xfffe && cp != 0xffff);
    if (!allowed) cp = k_replacement;
    switch (cp) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        put_utf8(out, cp);
    }
    i += n;
  }
  return out;
}

std::string markdown(std::string_view s) {
  std::string out;
  for (const char ch : printable(s)) {
    switch (ch) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '|':
        out += "\\|";
        break;
      case '*':
      case '_':
      case '`':
      case '[':
      case ']':
      case '\\':
      case '#':
      case '!':
        out += '\\';
        out += ch;
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string markdown_code(std::string_view s) {
  const std::string body = printable(s);
  std::size_t longest = 0, run = 0;
  for (const char ch : body) {
    run = ch == '`' ? run + 1 : 0;
    longest = run > longest ? run : longest;
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

std::string toml_string(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    std::uint32_t cp = 0;
    const std::size_t n = decode_or_replace(s, i, cp);
    if (cp == '"') {
      out += "\\\"";
    } else if (cp == '\\') {
      out += "\\\\";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7f || needs_escape(cp)) {
      out += "\\u";
      hex4(out, cp);
    } else {
      put_utf8(out, cp);
    }
    i += n;
  }
  return out;
}

std::string shell_word(std::string_view s) {
  std::string out = "'";
  for (const char ch : printable(s)) {
    if (ch == '\'')
      out += "'\\''";
    else
      out += ch;
  }
  return out + "'";
}

std::string comment(std::string_view s) { return printable(s); }

}  // namespace trainledger::text
