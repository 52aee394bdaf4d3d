#ifndef OAUTH_RELAY_CHIREDIS_SHIM_H
#define OAUTH_RELAY_CHIREDIS_SHIM_H
// hiredis (Debian libhiredis-dev): the async API and its libuv adapter, in the two versions Debian
// ships: 0.14 (Debian 12) and 1.2 (Debian 13). The relay uses neither's TLS (0.14 has none; 1.x has
// it in a library of its own, hiredis_ssl), so it refuses rediss:// (RedisProtocol), and neither's
// timeouts (1.x's adapter starts its timer only when one is set): RedisConnection times every step
// itself.
#include <string.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libuv.h>

#if HIREDIS_MAJOR < 1
// The 0.14 adapter drops a failed poll (status < 0: libuv's POLLERR, as for a refused connect or
// a reset): hiredis never hears of it and the connection hangs until a timeout. This callback
// hands hiredis the events it was waiting for instead, and hiredis finds the socket's error
// itself, as the adapter of hiredis 1.x does (its redisLibuvPoll), which is why 1.x keeps its own.
static void oauth_relay_redis_poll(uv_poll_t *handle, int status, int events) {
    redisLibuvEvents *p = (redisLibuvEvents *)handle->data;
    int ready = status < 0 ? p->events : events;
    if (p->context != NULL && (ready & UV_READABLE)) redisAsyncHandleRead(p->context);
    if (p->context != NULL && (ready & UV_WRITABLE)) redisAsyncHandleWrite(p->context);
}

static void oauth_relay_redis_watch(redisLibuvEvents *p, int events) {
    p->events = events;
    if (p->events) {
        uv_poll_start(&p->handle, p->events, oauth_relay_redis_poll);
    } else {
        uv_poll_stop(&p->handle);
    }
}

static void oauth_relay_redis_add_read(void *privdata) {
    redisLibuvEvents *p = (redisLibuvEvents *)privdata;
    oauth_relay_redis_watch(p, p->events | UV_READABLE);
}

static void oauth_relay_redis_del_read(void *privdata) {
    redisLibuvEvents *p = (redisLibuvEvents *)privdata;
    oauth_relay_redis_watch(p, p->events & ~UV_READABLE);
}

static void oauth_relay_redis_add_write(void *privdata) {
    redisLibuvEvents *p = (redisLibuvEvents *)privdata;
    oauth_relay_redis_watch(p, p->events | UV_WRITABLE);
}

static void oauth_relay_redis_del_write(void *privdata) {
    redisLibuvEvents *p = (redisLibuvEvents *)privdata;
    oauth_relay_redis_watch(p, p->events & ~UV_WRITABLE);
}
#endif

// Attaches a context to a loop with the adapter (its poll handle, its cleanup); with hiredis 0.14,
// the poll callback above replaces the adapter's. The loop is an untyped pointer so that the Swift
// side names no libuv type (EventLoop owns those).
static inline int oauth_relay_redis_attach(redisAsyncContext *context, void *loop) {
    if (redisLibuvAttach(context, (uv_loop_t *)loop) != REDIS_OK) {
        // Both adapters set their callbacks before their allocation or uv_poll_init can fail, and
        // their data only once both succeeded: freeing the context would call the adapter's
        // cleanup with NULL. Without callbacks, the free leaves the event library alone (the
        // adapter's allocation, which it names nowhere, is lost).
        if (context->ev.data == NULL) memset(&context->ev, 0, sizeof context->ev);
        return REDIS_ERR;
    }
#if HIREDIS_MAJOR < 1
    context->ev.addRead = oauth_relay_redis_add_read;
    context->ev.delRead = oauth_relay_redis_del_read;
    context->ev.addWrite = oauth_relay_redis_add_write;
    context->ev.delWrite = oauth_relay_redis_del_write;
#endif
    return REDIS_OK;
}

#endif
