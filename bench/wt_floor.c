/*
 * The floor for `iolab kv --engine wiredtiger`: db_bench's fillrandom then
 * readrandom as a bare C loop on the same library and the same calls iolab
 * makes (one session and cursor, set_key/set_value/insert per write,
 * set_key/search/get_value/reset per read, raw byte keys and values in one
 * btree table) with the connection configured as iolab configures it by
 * default. No per-operation timing, no value check: what is left is
 * WiredTiger's own cost. Built and run by bench/kv_wiredtiger.sh.
 *
 * By default both phases run on the main thread with one session and
 * cursor. With PHASE_THREADS set in the environment each phase runs on a
 * thread of its own with its own session and cursor, as iolab's workers and
 * db_bench's benchmark threads do.
 *
 * EVICTION_THREADS in the environment sets WiredTiger's eviction threads as
 * iolab's --wt-eviction-threads does: a count (default 4, as iolab and
 * MongoDB) or auto (WiredTiger's own tuning between 1 and 8).
 *
 * usage: [PHASE_THREADS=1] [EVICTION_THREADS=N|auto] wt_floor HOME NUM KEY_SIZE VALUE_SIZE READS SEED
 * prints: fillrandom OPS_PER_S / readrandom OPS_PER_S FOUND
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wiredtiger.h>

static uint64_t state;

/* xorshift64*: a cheap uniform generator, like iolab's per-worker PRNG. */
static uint64_t next_random(void) {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 2685821657736338717ULL;
}

/* db_bench's key: the number's last key_size digits, zero-padded. */
static void fixed_key(uint64_t n, char *key, size_t key_size) {
    memset(key, '0', key_size);
    for (size_t i = key_size; i > 0 && n > 0; i--, n /= 10)
        key[i - 1] = (char)('0' + n % 10);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what, int ret) {
    fprintf(stderr, "wt_floor: %s: %s\n", what, wiredtiger_strerror(ret));
    exit(1);
}

static WT_CONNECTION *conn;
static uint64_t num, reads;
static size_t key_size, value_size;

/* A phase's session and its cursor on the table. */
static WT_CURSOR *open_cursor(WT_SESSION **s) {
    WT_CURSOR *c;
    int ret;
    if ((ret = conn->open_session(conn, NULL, NULL, s)) != 0)
        die("open_session", ret);
    if ((ret = (*s)->open_cursor(*s, "table:iolab", NULL, NULL, &c)) != 0)
        die("open_cursor", ret);
    return c;
}

static void *fill(void *arg) {
    WT_SESSION *s;
    WT_CURSOR *c = arg ? arg : open_cursor(&s);
    int ret;
    char *key = malloc(key_size), *value = malloc(value_size);
    for (size_t i = 0; i < value_size; i++)
        value[i] = (char)next_random();
    WT_ITEM k = {.data = key, .size = key_size}, v = {.data = value, .size = value_size};

    double t0 = now();
    for (uint64_t i = 0; i < num; i++) {
        fixed_key(next_random() % num, key, key_size);
        /* the value changes per write, as iolab's (its header carries a version) */
        memcpy(value, &i, sizeof(i) < value_size ? sizeof(i) : value_size);
        c->set_key(c, &k);
        c->set_value(c, &v);
        if ((ret = c->insert(c)) != 0)
            die("insert", ret);
    }
    double t1 = now();
    printf("fillrandom %.1f\n", (double)num / (t1 - t0));
    if (!arg && (ret = s->close(s, NULL)) != 0)
        die("session close", ret);
    free(key);
    free(value);
    return NULL;
}

static void *read_random(void *arg) {
    WT_SESSION *s;
    WT_CURSOR *c = arg ? arg : open_cursor(&s);
    int ret;
    char *key = malloc(key_size);
    WT_ITEM k = {.data = key, .size = key_size}, out;
    uint64_t found = 0, sum = 0;
    double t0 = now();
    for (uint64_t i = 0; i < reads; i++) {
        fixed_key(next_random() % num, key, key_size);
        c->set_key(c, &k);
        ret = c->search(c);
        if (ret == 0) {
            if ((ret = c->get_value(c, &out)) != 0)
                die("get_value", ret);
            sum += out.size;
            found++;
            c->reset(c);
        } else if (ret != WT_NOTFOUND)
            die("search", ret);
    }
    double t1 = now();
    printf("readrandom %.1f %llu\n", (double)reads / (t1 - t0), (unsigned long long)found);
    if (sum == 0 && found > 0)
        exit(1);
    if (!arg && (ret = s->close(s, NULL)) != 0)
        die("session close", ret);
    free(key);
    return NULL;
}

/* A phase on the main thread's cursor, or on a thread of its own. */
static void run_phase(void *(*phase)(void *), WT_CURSOR *main_cursor, int own_thread) {
    if (!own_thread) {
        phase(main_cursor);
        return;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, phase, NULL) != 0 || pthread_join(t, NULL) != 0) {
        fprintf(stderr, "wt_floor: a phase's thread failed\n");
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: [PHASE_THREADS=1] wt_floor HOME NUM KEY_SIZE VALUE_SIZE READS SEED\n");
        return 2;
    }
    const char *home = argv[1];
    num = strtoull(argv[2], NULL, 10);
    reads = strtoull(argv[5], NULL, 10);
    key_size = strtoul(argv[3], NULL, 10);
    value_size = strtoul(argv[4], NULL, 10);
    state = strtoull(argv[6], NULL, 10) | 1;
    int own_threads = getenv("PHASE_THREADS") != NULL;

    WT_SESSION *s;
    int ret;
    /* iolab's defaults: 64 MiB cache, journal on without sync, checkpoints
     * every 60 s, 4 eviction threads. */
    const char *eviction = getenv("EVICTION_THREADS");
    if (eviction == NULL)
        eviction = "4";
    char config[256];
    int n = snprintf(config, sizeof config,
                     "create,cache_size=67108864,session_max=1100,log=(enabled=true),"
                     "transaction_sync=(enabled=false),checkpoint=(wait=60)");
    if (strcmp(eviction, "auto") != 0)
        snprintf(config + n, sizeof config - n, ",eviction=(threads_min=%d,threads_max=%d)",
                 atoi(eviction), atoi(eviction));
    if ((ret = wiredtiger_open(home, NULL, config, &conn)) != 0)
        die("open", ret);
    if ((ret = conn->open_session(conn, NULL, NULL, &s)) != 0)
        die("open_session", ret);
    if ((ret = s->create(s, "table:iolab", "key_format=u,value_format=u")) != 0)
        die("create", ret);
    WT_CURSOR *c = NULL;
    if (!own_threads && (ret = s->open_cursor(s, "table:iolab", NULL, NULL, &c)) != 0)
        die("open_cursor", ret);

    run_phase(fill, c, own_threads);
    run_phase(read_random, c, own_threads);
    return conn->close(conn, NULL) == 0 ? 0 : 1;
}
