#ifndef OAUTH_RELAY_CHIREDIS_SHIM_H
#define OAUTH_RELAY_CHIREDIS_SHIM_H
// hiredis 0.14 (Debian libhiredis-dev): the async API and its libuv adapter. This hiredis has no
// TLS support (hiredis_ssl came with 1.0), so the relay refuses rediss:// (RedisProtocol).
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libuv.h>

// The 0.14 adapter drops a failed poll (status < 0: libuv's POLLERR, as for a refused connect or
// a reset): hiredis never hears of it and the connection hangs until a timeout. This callback
// hands hiredis the events it was waiting for instead, and hiredis finds the socket's error
// itself (as the adapter of hiredis 1.x does).
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

// Attaches a context to a loop with the adapter (its poll handle, its cleanup), the poll callback
// above in place of the adapter's. The loop is an untyped pointer so that the Swift side names no
// libuv type (EventLoop owns those).
static inline int oauth_relay_redis_attach(redisAsyncContext *context, void *loop) {
    if (redisLibuvAttach(context, (uv_loop_t *)loop) != REDIS_OK) return REDIS_ERR;
    context->ev.addRead = oauth_relay_redis_add_read;
    context->ev.delRead = oauth_relay_redis_del_read;
    context->ev.addWrite = oauth_relay_redis_add_write;
    context->ev.delWrite = oauth_relay_redis_del_write;
    return REDIS_OK;
}

#endif
