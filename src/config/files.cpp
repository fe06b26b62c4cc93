#include "files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace trainledger::config {

namespace {

// The real path of `p` (realpath(3): every link and ".." resolved), or nothing.
std::optional<std::filesystem::path> real_path(const std::filesystem::path& p) {
  char buf[PATH_MAX];
  if (!::realpath(p.c_str(), buf)) return std::nullopt;
  return std::filesystem::path(buf);
}

// Where `path` leads: weakly_canonical (the existing part resolved, links and ".." included),
// and a dangling symbolic link followed too, which weakly_canonical leaves as it is written
// (its target does not exist) — else a link out of the folder to nothing would read as a file
// missing inside it, and tell which files exist elsewhere. At most 40 links, as the kernel.
std::filesystem::path leads_to(const std::filesystem::path& path, std::error_code& ec) {
  namespace fs = std::filesystem;
  fs::path p = fs::absolute(path, ec);
  if (!ec) p = fs::weakly_canonical(p, ec);
  for (int hops = 0; !ec; ++hops) {
    // The first component that does not exist once followed is the only one that can be a
    // link still (the ones before it were resolved).
    fs::path prefix;
    auto it = p.begin();
    for (; it != p.end(); ++it) {
      prefix /= *it;
      std::error_code missing;
      if (!fs::exists(prefix, missing)) break;
    }
    if (it == p.end()) return p;
    std::error_code not_link;
    if (!fs::is_symlink(fs::symlink_status(prefix, not_link))) return p;
    if (hops == 40) {
      ec = std::make_error_code(std::errc::too_many_symbolic_link_levels);
      break;
    }
    fs::path target = fs::read_symlink(prefix, ec);
    if (ec) break;
    fs::path rest;
    for (++it; it != p.end(); ++it) rest /= *it;
    fs::path next = target.is_absolute() ? target : prefix.parent_path() / target;
    if (!rest.empty()) next /= rest;
    p = fs::weakly_canonical(next, ec);
  }
  return {};
}

// Whether the resolved `p` is `root` or below it, component by component.
bool below(const std::filesystem::path& p, const std::filesystem::path& root) {
  auto pi = p.begin();
  for (auto ri = root.begin(); ri != root.end(); ++ri, ++pi) {
    if (ri->empty()) continue;  // a trailing separator
    if (pi == p.end() || *pi != *ri) return false;
  }
  return true;
}

// The real path of the open file `fd`: /proc/self/fd names what was opened, whatever was
// renamed or relinked since; realpath of the name where /proc is absent.
std::optional<std::filesystem::path> opened_path(int fd, const std::filesystem::path& name) {
  const std::string link = fmt::format("/proc/self/fd/{}", fd);
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n > 0 && buf[0] == '/')
    return std::filesystem::path(std::string(buf, static_cast<std::size_t>(n)));
  return real_path(name);
}

// Why a file could not be opened, in words a user acts on.
std::string open_error(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return "no such file";
    case EACCES:
    case EPERM:
      return "permission denied";
    case ELOOP:
      return "too many symbolic links";
    case ENAMETOOLONG:
      return "the name is too long";
    default:
      return std::strerror(err);
  }
}

constexpr const char* k_out_of_folder =
    "out of its folder, by a symbolic link or '..' (only files inside the folder are read)";

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::optional<std::string> read_file_inside(const std::filesystem::path& path,
                                            const std::filesystem::path& root_in,
                                            std::uintmax_t limit, std::string& why) {
  std::filesystem::path root = root_in;
  if (root.empty()) root = path.parent_path();
  if (root.empty()) root = ".";
  const auto real_root = real_path(root);
  if (!real_root) {
    // The folder itself is missing (a plan named in a folder that does not exist): the file
    // is too. The folder is the one the user named or the plan's own, so nothing is probed.
    why = errno == ENOENT || errno == ENOTDIR ? open_error(errno)
                                              : "cannot resolve the folder it must be inside";
    return std::nullopt;
  }
  // Where the name leads, before anything about the file itself is asked: a name out of the
  // folder gets one answer whether or not something exists there (no probing of other folders
  // through the error message). The existing part of the name is resolved, links included.
  {
    std::error_code ec;
    const std::filesystem::path leads = leads_to(path, ec);
    if (ec || !below(leads, *real_root)) {
      why = ec ? "cannot resolve where it leads" : k_out_of_folder;
      return std::nullopt;
    }
  }
  // Before opening: a name that is no regular file (once followed) is not opened at all.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    why = open_error(errno);
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    why = S_ISDIR(st.st_mode) ? "a directory, not a file"
                              : "not a regular file (a device, a FIFO or a socket)";
    return std::nullopt;
  }
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (f.fd < 0) {
    why = open_error(errno);
    return std::nullopt;
  }
  struct stat opened {};
  if (::fstat(f.fd, &opened) != 0 || !S_ISREG(opened.st_mode)) {
    why = "not a regular file";
    return std::nullopt;
  }
  const auto where = opened_path(f.fd, path);
  if (!where || !below(*where, *real_root)) {
    why = k_out_of_folder;
    return std::nullopt;
  }
  if (static_cast<std::uintmax_t>(opened.st_size) > limit) {
    why = fmt::format("larger than {} MiB", limit >> 20);
    return std::nullopt;
  }
  std::string text;
  text.reserve(static_cast<std::size_t>(opened.st_size));
  // Read at most `limit` bytes even if the file grew since it was measured.
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(f.fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      why =
          errno == EISDIR ? "a directory, not a file" : "a read error (" + open_error(errno) + ")";
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > limit) {
      why = fmt::format("larger than {} MiB", limit >> 20);
      return std::nullopt;
    }
  }
  return text;
}

std::optional<std::string> read_regular_file(const std::string& path, std::uintmax_t limit,
                                             std::string& why) {
  return read_file_inside(path, {}, limit, why);
}

bool inside_folder(const std::filesystem::path& path, const std::filesystem::path& root) {
  std::error_code ec;
  const std::filesystem::path p = leads_to(path, ec);
  if (ec) return false;
  const std::filesystem::path r = std::filesystem::weakly_canonical(root, ec);
  if (ec) return false;
  return below(p, r);
}

std::string unwritable_reason(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT ? "" : "cannot inspect it";
  if (S_ISREG(st.st_mode)) return "";
  if (S_ISLNK(st.st_mode)) return "it is a symbolic link; refusing to replace it";
  if (S_ISDIR(st.st_mode)) return "it is a directory";
  return "it exists and is not a regular file (a device, FIFO or socket); refusing to replace it";
}

void write_file_atomically(const std::string& path, const std::string& text) {
  if (const std::string why = unwritable_reason(path); !why.empty())
    throw std::runtime_error(fmt::format("cannot write {}: {}", path, why));
  const std::filesystem::path target(path);
  const std::filesystem::path tmp =
      target.parent_path() / (target.filename().string() + fmt::format(".tmp-{}", ::getpid()));
  Fd f;
  f.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (f.fd < 0) throw std::runtime_error(fmt::format("cannot write {}", path));
  auto fail = [&](const char* what) {
    ::close(f.fd);
    f.fd = -1;
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot write {}{}", path, what));
  };
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(f.fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("");
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(f.fd) != 0 && errno != EINVAL) fail("");
  if (::close(f.fd) != 0) {
    f.fd = -1;
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot write {}", path));
  }
  f.fd = -1;
  // Checked again just before the rename: the target may have been replaced meanwhile.
  if (!unwritable_reason(path).empty()) fail(": it is no longer a regular file");
  if (::rename(tmp.c_str(), target.c_str()) != 0) fail(" (rename failed)");
}

}  // namespace trainledger::config
