/*
 * The few WiredTiger calls iolab makes, as plain C functions: WT_CONNECTION,
 * WT_SESSION and WT_CURSOR are structs of function pointers, so calling them
 * through this file (compiled against the installed wiredtiger.h by build.rs)
 * keeps their layout the header's, never a hand copy of it.
 * Every function returns WiredTiger's error code (0, WT_NOTFOUND, errno).
 */
#include <stddef.h>
#include <string.h>
#include <wiredtiger.h>

/* WiredTiger's last error message on this thread, for iolab's error chain
 * (instead of WiredTiger printing it to stderr). */
static __thread char last_error[1024];

static int on_error(WT_EVENT_HANDLER *h, WT_SESSION *s, int err, const char *msg) {
    (void)h;
    (void)s;
    (void)err;
    strncpy(last_error, msg, sizeof(last_error) - 1);
    last_error[sizeof(last_error) - 1] = '\0';
    return 0;
}

static WT_EVENT_HANDLER handler = {.handle_error = on_error};

/* The message of the last error on this thread, cleared by reading it. */
const char *iolab_wt_last_error(void) {
    static __thread char out[sizeof(last_error)];
    memcpy(out, last_error, sizeof(out));
    last_error[0] = '\0';
    return out;
}

int iolab_wt_notfound(void) { return WT_NOTFOUND; }

const char *iolab_wt_version(void) { return wiredtiger_version(NULL, NULL, NULL); }

const char *iolab_wt_strerror(int err) { return wiredtiger_strerror(err); }

int iolab_wt_open(const char *home, const char *config, WT_CONNECTION **conn) {
    return wiredtiger_open(home, &handler, config, conn);
}

int iolab_wt_close(WT_CONNECTION *conn) { return conn->close(conn, NULL); }

int iolab_wt_open_session(WT_CONNECTION *conn, WT_SESSION **session) {
    return conn->open_session(conn, NULL, NULL, session);
}

int iolab_wt_session_close(WT_SESSION *s) { return s->close(s, NULL); }

int iolab_wt_create(WT_SESSION *s, const char *uri, const char *config) {
    return s->create(s, uri, config);
}

int iolab_wt_open_cursor(WT_SESSION *s, const char *uri, WT_CURSOR **c) {
    return s->open_cursor(s, uri, NULL, NULL, c);
}

int iolab_wt_checkpoint(WT_SESSION *s) { return s->checkpoint(s, NULL); }

/* Insert or replace (cursors overwrite by default). */
int iolab_wt_put(WT_CURSOR *c, const void *k, size_t kl, const void *v, size_t vl) {
    WT_ITEM key = {.data = k, .size = kl};
    WT_ITEM value = {.data = v, .size = vl};
    c->set_key(c, &key);
    c->set_value(c, &value);
    return c->insert(c);
}

/* Search for k; on 0 the value stays valid until the cursor's next call
 * (the caller resets the cursor once it has looked at it). */
int iolab_wt_get(WT_CURSOR *c, const void *k, size_t kl, const void **v, size_t *vl) {
    WT_ITEM key = {.data = k, .size = kl};
    WT_ITEM value;
    int ret;
    c->set_key(c, &key);
    if ((ret = c->search(c)) != 0)
        return ret;
    if ((ret = c->get_value(c, &value)) != 0)
        return ret;
    *v = value.data;
    *vl = value.size;
    return 0;
}

int iolab_wt_remove(WT_CURSOR *c, const void *k, size_t kl) {
    WT_ITEM key = {.data = k, .size = kl};
    c->set_key(c, &key);
    return c->remove(c);
}

int iolab_wt_reset(WT_CURSOR *c) { return c->reset(c); }

/* Position the cursor on the first key >= k (WT_NOTFOUND: none). */
int iolab_wt_seek(WT_CURSOR *c, const void *k, size_t kl) {
    WT_ITEM key = {.data = k, .size = kl};
    int exact, ret;
    c->set_key(c, &key);
    if ((ret = c->search_near(c, &exact)) != 0)
        return ret;
    return exact < 0 ? c->next(c) : 0;
}

int iolab_wt_next(WT_CURSOR *c) { return c->next(c); }

/* The key and value under a positioned cursor. */
int iolab_wt_current(WT_CURSOR *c, const void **k, size_t *kl, const void **v, size_t *vl) {
    WT_ITEM key, value;
    int ret;
    if ((ret = c->get_key(c, &key)) != 0 || (ret = c->get_value(c, &value)) != 0)
        return ret;
    *k = key.data;
    *kl = key.size;
    *v = value.data;
    *vl = value.size;
    return 0;
}
