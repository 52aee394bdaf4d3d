#ifndef OAUTH_RELAY_CLIBUV_SHIM_H
#define OAUTH_RELAY_CLIBUV_SHIM_H
#include <uv.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <signal.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>

/* splice(2) and pipe2(2) are declared by glibc only under _GNU_SOURCE, which a module header
   cannot set for headers already built: the system calls, wrapped (SpliceRelay.swift). */
enum { relay_splice_move = 1, relay_splice_nonblock = 2, relay_setpipe_size = 1031 };
static inline long relay_splice(int fd_in, int fd_out, size_t length, unsigned int flags) {
    return syscall(SYS_splice, fd_in, NULL, fd_out, NULL, length, flags);
}
static inline int relay_pipe2_nonblocking(int fds[2]) {
    return (int)syscall(SYS_pipe2, fds, O_NONBLOCK | O_CLOEXEC);
}
#endif
