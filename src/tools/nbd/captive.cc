// captive.cc: --run 'CMD' (see captive.hpp).
#include "nbd/captive.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <signal.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

extern char** environ;

namespace iov::nbd {

namespace {

// RFC 3986: unreserved characters (and '/' where a path allows it) stay.
std::string percent_encode(const std::string& s, bool keep_slash) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

}  // namespace

std::string export_uri(const listener& l, const std::string& export_name, bool tls) {
  const std::string name = percent_encode(export_name, false);
  if (l.is_unix())
    return std::string(tls ? "nbds+unix" : "nbd+unix") + ":///" + name + "?socket=" + percent_encode(l.path(), true);
  std::string host = l.host() == "0.0.0.0" ? "127.0.0.1" : l.host() == "::" ? "::1" : l.host();
  if (host.find(':') != std::string::npos)
    host = "[" + host + "]";
  return std::string(tls ? "nbds" : "nbd") + "://" + host + ":" + std::to_string(l.port()) + "/" + name;
}

pid_t start_captive(const std::string& cmd, const listener& l, const std::string& export_name, int tls) {
  const std::string uri = export_uri(l, export_name, tls != 0);
  std::vector<std::string> vars = {"uri=" + uri, "nbd=" + uri, "exportname=" + export_name,
                                   "unixsocket=" + (l.is_unix() ? l.path() : std::string()),
                                   "port=" + (l.is_unix() ? std::string() : std::to_string(l.port()))};
  if (tls)
    vars.push_back("tls=" + std::to_string(tls));
  std::vector<char*> env;
  for (char** e = environ; *e; e++) {
    const char* eq = std::strchr(*e, '=');
    const std::string key(*e, eq ? static_cast<size_t>(eq - *e) : std::strlen(*e));
    bool ours = false;
    for (const std::string& v : vars)
      ours |= v.compare(0, key.size() + 1, key + "=") == 0;
    if (!ours)
      env.push_back(*e);
  }
  for (std::string& v : vars)
    env.push_back(v.data());
  env.push_back(nullptr);
  std::string sh = "/bin/sh", dash_c = "-c", command = cmd;
  char* argv[] = {sh.data(), dash_c.data(), command.data(), nullptr};
  // The command starts with the default disposition of what the server
  // ignores (SIGPIPE, SIGUSR1, SIGUSR2), and nothing blocked.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults, none;
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGUSR1, SIGUSR2, SIGINT, SIGTERM, SIGHUP, SIGQUIT})
    sigaddset(&defaults, sig);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid;
  const int err = posix_spawn(&pid, "/bin/sh", nullptr, &attr, argv, env.data());
  posix_spawnattr_destroy(&attr);
  return err ? -err : pid;
}

int captive_exit_status(int st) {
  if (WIFEXITED(st))
    return WEXITSTATUS(st);
  if (WIFSIGNALED(st))
    return 128 + WTERMSIG(st);
  return 1;
}

}  // namespace iov::nbd
