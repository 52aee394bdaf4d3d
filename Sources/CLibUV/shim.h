#ifndef OAUTH_RELAY_CLIBUV_SHIM_H
#define OAUTH_RELAY_CLIBUV_SHIM_H
#include <uv.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <signal.h>
#endif
