// captive.hpp: iov-nbd's captive mode (--run 'CMD'), as nbdkit's: once the
// server listens, CMD runs under /bin/sh -c with the variables nbdkit sets
// ($uri and $nbd: the export's NBD URI; $unixsocket or $port; $exportname;
// $tls when TLS is on), and the server exits with CMD's status when CMD
// ends (128 + the signal's number when a signal ended it).
//
//   pid_t pid = iov::nbd::start_captive("nbdinfo \"$uri\"", server.where(), "", 0);
//   ...; waitpid(pid, &st, 0); return iov::nbd::captive_exit_status(st);
#pragma once

#include <sys/types.h>

#include <string>

#include "nbd/listener.hpp"

namespace iov::nbd {

// The NBD URI a client on this host uses for the export behind l:
// nbd+unix:///NAME?socket=PATH or nbd://HOST:PORT/NAME (nbds... with TLS),
// NAME and PATH percent-encoded. A wildcard address becomes loopback.
std::string export_uri(const listener& l, const std::string& export_name, bool tls);

// Starts CMD; its pid, or -errno. tls: 0 off, 1 on, 2 require (as $tls).
pid_t start_captive(const std::string& cmd, const listener& l, const std::string& export_name, int tls);

// A wait status as a shell reports it: the exit status, or 128 + signal.
int captive_exit_status(int wait_status);

}  // namespace iov::nbd
