// cyclone-perf: a Cyclone DDS 0.10.2 peer (Debian's libddsc) that speaks ddsperf's protocol with
// fastdds-perf's command line and output, so that `tessera bench` gets Cyclone's latency from a
// histogram of every round trip (median, p99, p99.9, stddev) where ddsperf prints only
// per-second summaries.
//
//   cyclone-perf [OPTIONS] MODE...
//     -i ID  domain     -D S  duration (s)      -u  best effort      -k N|all  history
//     -n N   keys       -1    sub line every s  -T KS (the only type) -X  accepted, ignored
//     -Q minmatch:N | initwait:S | roundtrips:N | samples:N
//     --warmup S   round trips of the first S s after the first pong stay out of the summary
//     --count N    stop after N measured pings (past the warm-up) were answered by every peer
//     --json       accepted: output is always tessera perf's JSON lines
//   MODE: ping [size S] [listener|waitset|polling]   pong [listener|waitset|polling]
//         sub [listener|waitset|polling]            pub [R[Hz|kHz]] [size S] [burst N]
//
// The protocol is ddsperf's: topics DDSPerf{R,U}{Data,Ping,Pong}KS of type KeyedSeq (the same
// IDL, compiled by the same idlc, so its XTypes identifiers are ddsperf's), participant
// USER_DATA "DDSPerf:<R>:<pid>:<host>", one pong writer per peer in a publisher whose partition
// is that peer's GUID, the pong reader in our own GUID's partition, and the timestamp flag (odd
// source timestamp = answer me). The output is `tessera perf --json`'s lines (participant,
// latency, sub, error, summary with the whole-run histogram); with more than one ponger the
// summary also carries "first" and "all": per ping, the time to its first and to its last pong.
//
// Not here (the bench does not use them; refused with exit 3): ping rates, `pub` ping shares,
// other -T types, -L, -c, -d, -l, -R. A subscriber does not answer data samples with odd
// timestamps (pings among data).
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dds/dds.h"
#include "ddsperf_types.h"

// ---------------------------------------------------------------- clocks and output

static int g_pid;
static int64_t g_t0;  // CLOCK_MONOTONIC ns of the run start
static pthread_mutex_t g_out = PTHREAD_MUTEX_INITIALIZER;

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double since_start(void) { return (double)(mono_ns() - g_t0) / 1e9; }

// One JSON object per line, flushed at once (the bench reads lines as they arrive).
static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pthread_mutex_lock(&g_out);
  fputc('{', stdout);
  vfprintf(stdout, fmt, ap);
  fputs("}\n", stdout);
  fflush(stdout);
  pthread_mutex_unlock(&g_out);
  va_end(ap);
}

// A JSON string of `s` (host names and messages: printable ASCII in practice) into `buf`.
static const char *json_str(const char *s, char *buf, size_t n) {
  size_t o = 0;
  if (n < 3) return "\"\"";
  buf[o++] = '"';
  for (; *s && o + 8 < n; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      buf[o++] = '\\';
      buf[o++] = (char)c;
    } else if (c < 0x20) {
      o += (size_t)snprintf(buf + o, n - o, "\\u%04x", c);
    } else {
      buf[o++] = (char)c;
    }
  }
  buf[o++] = '"';
  buf[o] = 0;
  return buf;
}

static void emit_error(const char *kind, const char *msg) {
  char b[512];
  emit("\"type\":\"error\",\"pid\":%d,\"error\":\"%s\",\"message\":%s,\"t\":%.3f", g_pid, kind,
       json_str(msg, b, sizeof b), since_start());
}

// ---------------------------------------------------------------- histograms

// Exact below 2048 ns, then 1024 sub-buckets per power of two up to 2^41 ns (about 0.1 %
// resolution, as fastdds-perf and tessera perf); a value is reported as its bucket's middle.
#define HIST_EXP_MAX 41
#define HIST_N (2048 + (HIST_EXP_MAX - 11 + 1) * 1024)

typedef struct {
  uint64_t *b;  // HIST_N counts
  uint64_t n;
} hist_t;

static void hist_init(hist_t *h) {
  h->b = calloc(HIST_N, sizeof *h->b);
  h->n = 0;
  if (!h->b) abort();
}

static size_t hist_index(uint64_t v) {
  if (v < 2048) return (size_t)v;
  int e = 63 - __builtin_clzll(v);
  if (e > HIST_EXP_MAX) return HIST_N - 1;
  return 2048 + (size_t)(e - 11) * 1024 + (size_t)((v >> (e - 10)) & 1023);
}

static uint64_t hist_value(size_t i) {
  if (i < 2048) return i;
  int e = (int)((i - 2048) / 1024) + 11, shift = e - 10;
  uint64_t sub = (i - 2048) % 1024 + 1024;
  return (sub << shift) + ((uint64_t)1 << shift) / 2;
}

static void hist_record(hist_t *h, uint64_t v) {
  h->b[hist_index(v)]++;
  h->n++;
}

static uint64_t hist_quantile(const hist_t *h, double q) {
  uint64_t rank = (uint64_t)(q * (double)h->n + 0.999999), seen = 0;
  if (rank < 1) rank = 1;
  for (size_t i = 0; i < HIST_N; i++) {
    seen += h->b[i];
    if (h->b[i] && seen >= rank) return hist_value(i);
  }
  return 0;
}

// `"hist":[[v,n],...]` and the summary figures of `h`, appended to `out` (grown as needed).
typedef struct {
  char *s;
  size_t len, cap;
} strbuf_t;

static void sb_printf(strbuf_t *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf_t *sb, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = sb->cap - sb->len;
    int k = vsnprintf(sb->s ? sb->s + sb->len : NULL, room, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    if ((size_t)k < room) {
      sb->len += (size_t)k;
      return;
    }
    sb->cap = (sb->cap + (size_t)k + 1) * 2;
    sb->s = realloc(sb->s, sb->cap);
    if (!sb->s) abort();
  }
}

static void sb_hist(strbuf_t *sb, const hist_t *h) {
  double sum = 0;
  for (size_t i = 0; i < HIST_N; i++) sum += (double)hist_value(i) * (double)h->b[i];
  sb_printf(sb,
            "\"cnt\":%" PRIu64 ",\"mean_us\":%.3f,\"min_us\":%.3f,\"p50_us\":%.3f,\"p90_us\":%.3f,"
            "\"p99_us\":%.3f,\"p999_us\":%.3f,\"max_us\":%.3f,\"hist\":[",
            h->n, h->n ? sum / (double)h->n / 1e3 : 0.0, hist_quantile(h, 0) / 1e3,
            hist_quantile(h, 0.5) / 1e3, hist_quantile(h, 0.9) / 1e3, hist_quantile(h, 0.99) / 1e3,
            hist_quantile(h, 0.999) / 1e3, hist_quantile(h, 1) / 1e3);
  bool first = true;
  for (size_t i = 0; i < HIST_N; i++)
    if (h->b[i]) {
      sb_printf(sb, "%s[%" PRIu64 ",%" PRIu64 "]", first ? "" : ",", hist_value(i), h->b[i]);
      first = false;
    }
  sb_printf(sb, "]");
}

// ---------------------------------------------------------------- arguments

enum trigger { T_LISTENER, T_WAITSET, T_POLLING };

typedef struct {
  uint32_t domain;
  double duration_s;  // 0: until a signal
  bool best_effort;
  int32_t history;  // 0: KEEP_ALL
  uint32_t nkeys;
  bool sub_every_second;
  uint32_t minmatch;
  double initwait_s;  // < 0: no wait
  uint64_t q_roundtrips, q_samples, count;
  double warmup_s;
  bool ping, pong, sub, pub;
  enum trigger pp_trigger, sub_trigger;
  uint32_t ping_size, pub_size, burst;
  double pub_rate;  // bursts per second; 0: unlimited
} config_t;

#define FIXED 12u  // seq + keyval + sequence length: ddsperf's "size" of an empty KS

static void usage_error(const char *what, const char *arg) {
  fprintf(stderr, "cyclone-perf: %s%s%s\n", what, arg ? " " : "", arg ? arg : "");
  exit(3);
}

static bool parse_u64(const char *s, uint64_t *out) {
  char *end;
  if (!*s || *s == '-') return false;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

static bool parse_f(const char *s, double *out) {
  char *end;
  if (!*s) return false;
  double v = strtod(s, &end);
  if (*end || !(v >= 0) || v > 1e12) return false;
  *out = v;
  return true;
}

// "10", "10Hz", "10kHz", "inf".
static bool parse_rate(const char *s, double *out) {
  if (strcmp(s, "inf") == 0) {
    *out = 0;
    return true;
  }
  char num[64];
  size_t n = strlen(s);
  double mul = 1;
  if (n >= sizeof num) return false;
  memcpy(num, s, n + 1);
  if (n > 3 && strcmp(num + n - 3, "kHz") == 0) {
    num[n - 3] = 0;
    mul = 1000;
  } else if (n > 2 && strcmp(num + n - 2, "Hz") == 0) {
    num[n - 2] = 0;
  }
  double v;
  if (!parse_f(num, &v)) return false;
  *out = v * mul;
  return true;
}

static bool trigger_word(const char *w, enum trigger *t) {
  if (strcmp(w, "listener") == 0) *t = T_LISTENER;
  else if (strcmp(w, "waitset") == 0) *t = T_WAITSET;
  else if (strcmp(w, "polling") == 0) *t = T_POLLING;
  else return false;
  return true;
}

// The value of option `opt` (`-D5` or `-D 5`).
static const char *opt_value(int argc, char **argv, int *i, const char *opt) {
  size_t n = strlen(opt);
  if (strlen(argv[*i]) > n) return argv[*i] + n;
  if (*i + 1 >= argc) usage_error("missing value of", opt);
  return argv[++*i];
}

static uint32_t size_arg(int argc, char **argv, int *i) {
  uint64_t u;
  if (*i + 1 >= argc || !parse_u64(argv[*i + 1], &u) || u > (64u << 20)) usage_error("bad size", NULL);
  *i += 2;
  return u < FIXED ? FIXED : (uint32_t)u;
}

static config_t parse_args(int argc, char **argv) {
  config_t c = {.nkeys = 1, .initwait_s = -1, .ping_size = FIXED, .pub_size = FIXED, .burst = 1};
  int i = 1;
  for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
    const char *o = argv[i], *v;
    uint64_t u;
    double d;
    if (strcmp(o, "--json") == 0 || strcmp(o, "-X") == 0) {
    } else if (strcmp(o, "--warmup") == 0) {
      if (i + 1 >= argc || !parse_f(argv[i + 1], &c.warmup_s)) usage_error("bad --warmup", NULL);
      i++;
    } else if (strcmp(o, "--count") == 0) {
      if (i + 1 >= argc || !parse_u64(argv[i + 1], &c.count) || c.count == 0) usage_error("bad --count", NULL);
      i++;
    } else if (strcmp(o, "-u") == 0) {
      c.best_effort = true;
    } else if (strcmp(o, "-1") == 0) {
      c.sub_every_second = true;
    } else if (strncmp(o, "-i", 2) == 0) {
      if (!parse_u64(opt_value(argc, argv, &i, "-i"), &u) || u > 232) usage_error("bad domain id", NULL);
      c.domain = (uint32_t)u;
    } else if (strncmp(o, "-D", 2) == 0) {
      if (!parse_f(opt_value(argc, argv, &i, "-D"), &c.duration_s)) usage_error("bad duration", NULL);
    } else if (strncmp(o, "-k", 2) == 0) {
      v = opt_value(argc, argv, &i, "-k");
      if (strcmp(v, "all") == 0) c.history = 0;
      else if (parse_u64(v, &u) && u > 0 && u < 1000000) c.history = (int32_t)u;
      else usage_error("bad -k", v);
    } else if (strncmp(o, "-n", 2) == 0) {
      if (!parse_u64(opt_value(argc, argv, &i, "-n"), &u) || u == 0 || u > 1000000) usage_error("bad -n", NULL);
      c.nkeys = (uint32_t)u;
    } else if (strncmp(o, "-T", 2) == 0) {
      if (strcmp(opt_value(argc, argv, &i, "-T"), "KS") != 0) usage_error("only -T KS is supported", NULL);
    } else if (strncmp(o, "-Q", 2) == 0) {
      v = opt_value(argc, argv, &i, "-Q");
      const char *x = strchr(v, ':');
      if (!x) usage_error("bad -Q", v);
      size_t k = (size_t)(x - v);
      x++;
      if (k == 8 && strncmp(v, "minmatch", k) == 0 && parse_u64(x, &u)) c.minmatch = (uint32_t)u;
      else if (k == 8 && strncmp(v, "initwait", k) == 0 && parse_f(x, &d)) c.initwait_s = d;
      else if (k == 10 && strncmp(v, "roundtrips", k) == 0 && parse_u64(x, &u)) c.q_roundtrips = u;
      else if (k == 7 && strncmp(v, "samples", k) == 0 && parse_u64(x, &u)) c.q_samples = u;
      else usage_error("unsupported -Q", v);
    } else {
      usage_error("unsupported option", o);
    }
  }
  while (i < argc) {
    const char *m = argv[i++];
    if (strcmp(m, "ping") == 0 || strcmp(m, "pong") == 0) {
      bool ping = m[1] == 'i';
      if (ping) c.ping = true;
      else c.pong = true;
      while (i < argc) {
        double r;
        if (ping && strcmp(argv[i], "size") == 0) {
          c.ping_size = size_arg(argc, argv, &i);
        } else if (trigger_word(argv[i], &c.pp_trigger)) {
          i++;
        } else {
          if (ping && parse_rate(argv[i], &r)) usage_error("ping rates are not supported", NULL);
          break;
        }
      }
    } else if (strcmp(m, "sub") == 0) {
      c.sub = true;
      if (i < argc && trigger_word(argv[i], &c.sub_trigger)) i++;
    } else if (strcmp(m, "pub") == 0) {
      c.pub = true;
      while (i < argc) {
        double r;
        uint64_t u;
        size_t n = strlen(argv[i]);
        if (strcmp(argv[i], "size") == 0) {
          c.pub_size = size_arg(argc, argv, &i);
        } else if (strcmp(argv[i], "burst") == 0) {
          if (i + 1 >= argc || !parse_u64(argv[i + 1], &u) || u > 1000000) usage_error("bad burst", NULL);
          c.burst = (uint32_t)u;
          i += 2;
        } else if (n && argv[i][n - 1] == '%') {
          usage_error("pub ping shares (X%) are not supported", NULL);
        } else if (parse_rate(argv[i], &r)) {
          c.pub_rate = r;
          i++;
        } else {
          break;
        }
      }
    } else {
      usage_error("unsupported mode", m);
    }
  }
  if (!c.ping && !c.pong && !c.sub && !c.pub) c.pong = true;  // ddsperf's default
  return c;
}

// ---------------------------------------------------------------- the process

#define MAX_PEERS 256
#define MAX_HANDLES 1024

typedef struct {
  uint8_t prefix[12];
  char name[300];  // host:pid
  bool has_reader, present;
  dds_entity_t pong_writer;  // 0: not made yet
  dds_guid_t guid;
  // latency of this peer's pongs
  uint64_t *interval;  // one-way ns of the current second
  size_t interval_n, interval_cap;
  hist_t run;
  uint64_t total;
  bool answered;  // answered the current ping
  bool counted;   // all its endpoints matched at some point (ddsperf counts a peer that left)
} peer_t;

typedef struct {
  dds_instance_handle_t h;
  int peer;  // index into peers, -1: not a ddsperf peer
} handle_map_t;

typedef struct {
  dds_instance_handle_t h;
  uint32_t *expected;  // per key
  uint64_t received;
} seq_state_t;

static config_t cfg;
static volatile sig_atomic_t g_stop_flag;
static dds_entity_t dp, pub_self, sub_self, t_data, t_ping, t_pong;
static dds_entity_t w_ping, w_data, r_ping, r_pong, r_data, r_participants, g_guard;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;  // everything below
static peer_t peers[MAX_PEERS];
static int npeers;
static handle_map_t pong_map[MAX_HANDLES], ping_map[MAX_HANDLES];
static int n_pong_map, n_ping_map;
static uint8_t self_prefix[12];
static char host[256];
// ping state
static uint32_t cur_seq, pongs_seen;
static int64_t cur_ping_sent;  // wall ns of the current ping
static int64_t last_ping_mono;
static int64_t first_pong_mono = -1;
static bool pinging;
static hist_t first_hist, all_hist;  // per measured ping: first and last pong (one-way ns)
static uint64_t measured_pings;
static int64_t ping_first_pong;  // one-way ns of the current ping's first pong; -1: none yet
static KeyedSeq ping_sample;
static pthread_mutex_t ping_write = PTHREAD_MUTEX_INITIALIZER;
// sub state
static seq_state_t seqs[MAX_HANDLES];
static int nseqs;
static uint64_t total, lost, bytes, last_total, last_lost, last_bytes;
static uint32_t last_size;
static int exit_code;

static bool stopping(void) { return g_stop_flag != 0; }

static void request_stop(void) {
  g_stop_flag = 1;
  if (g_guard > 0) dds_set_guardcondition(g_guard, true);
}

static void guid_partition(const dds_guid_t *g, char *out) {
  char *o = out;
  for (int i = 0; i < 16; i++) o += sprintf(o, "%s%02x", i && i % 4 == 0 ? "_" : "", g->v[i]);
}

static int peer_by_prefix_locked(const uint8_t *prefix) {
  for (int i = 0; i < npeers; i++)
    if (memcmp(peers[i].prefix, prefix, 12) == 0) return i;
  return -1;
}

// The ddsperf peer of the remote writer `h` matched by `reader`, from a small cache.
static int peer_of_writer_locked(dds_entity_t reader, handle_map_t *map, int *n, dds_instance_handle_t h) {
  for (int i = 0; i < *n; i++)
    if (map[i].h == h) {
      if (map[i].peer >= 0) return map[i].peer;
      break;  // not a peer when last looked: look again (it may have been discovered since)
    }
  dds_builtintopic_endpoint_t *ep = dds_get_matched_publication_data(reader, h);
  if (!ep) return -1;
  int p = peer_by_prefix_locked(ep->participant_key.v);
  dds_builtintopic_free_endpoint(ep);
  for (int i = 0; i < *n; i++)
    if (map[i].h == h) {
      map[i].peer = p;
      return p;
    }
  if (*n < MAX_HANDLES) map[(*n)++] = (handle_map_t){h, p};
  return p;
}

static uint32_t expected_pongs_locked(void) {
  uint32_t n = 0;
  for (int i = 0; i < npeers; i++) n += peers[i].present;
  return n;
}

static bool past_warmup_locked(int64_t now_mono) {
  if (first_pong_mono < 0) first_pong_mono = now_mono;
  return (double)(now_mono - first_pong_mono) >= cfg.warmup_s * 1e9;
}

static void send_ping(void) {
  pthread_mutex_lock(&ping_write);
  pthread_mutex_lock(&m);
  ping_sample.seq = ++cur_seq;
  pongs_seen = 0;
  ping_first_pong = -1;
  for (int i = 0; i < npeers; i++) peers[i].answered = false;
  last_ping_mono = mono_ns();
  cur_ping_sent = wall_ns() | 1;
  const int64_t ts = cur_ping_sent;
  pthread_mutex_unlock(&m);
  dds_write_ts(w_ping, &ping_sample, ts);
  pthread_mutex_unlock(&ping_write);
}

// Takes everything `r` has, TAKE_MAX samples at a time on loan, and hands each valid one to
// `f`. The arrays live on the caller's stack, a Cyclone receive thread's in listener mode:
// 256 samples keep them near 20 KiB.
#define TAKE_MAX 256
static void take_all(dds_entity_t r, void (*f)(const KeyedSeq *, const dds_sample_info_t *)) {
  void *buf[TAKE_MAX];
  dds_sample_info_t info[TAKE_MAX];
  for (;;) {
    buf[0] = NULL;
    int n = dds_take(r, buf, info, TAKE_MAX, TAKE_MAX);
    if (n <= 0) return;
    for (int i = 0; i < n; i++)
      if (info[i].valid_data) f(buf[i], &info[i]);
    dds_return_loan(r, buf, n);
    if (n < TAKE_MAX) return;
  }
}

// A ping: the same sample back on the pong writer for its sender's participant, with the
// ping's (odd) source timestamp.
static void one_ping(const KeyedSeq *s, const dds_sample_info_t *info) {
  pthread_mutex_lock(&m);
  int p = peer_of_writer_locked(r_ping, ping_map, &n_ping_map, info->publication_handle);
  dds_entity_t w = p >= 0 ? peers[p].pong_writer : 0;
  pthread_mutex_unlock(&m);
  if (w > 0) dds_write_ts(w, s, info->source_timestamp | 1);
}

// A pong: one-way latency (now − ping timestamp) / 2 on our clock, per pong source; the first
// and the last pong of each ping go to the first/all histograms.
static void one_pong(const KeyedSeq *s, const dds_sample_info_t *info) {
  const int64_t now = wall_ns(), now_mono = mono_ns(), ts = info->source_timestamp;
  bool send = false;
  pthread_mutex_lock(&m);
  int p = peer_of_writer_locked(r_pong, pong_map, &n_pong_map, info->publication_handle);
  if (p >= 0 && (ts & 1)) {
    peer_t *pe = &peers[p];
    const uint64_t one_way = now > ts ? (uint64_t)(now - ts) / 2 : 0;
    const bool measured = past_warmup_locked(now_mono);
    if (pe->interval_n == pe->interval_cap) {
      pe->interval_cap = pe->interval_cap ? 2 * pe->interval_cap : 1024;
      pe->interval = realloc(pe->interval, pe->interval_cap * sizeof *pe->interval);
      if (!pe->interval) abort();
    }
    pe->interval[pe->interval_n++] = one_way;
    pe->total++;
    if (measured) hist_record(&pe->run, one_way);
    if (pinging && s->seq == cur_seq && !pe->answered) {
      pe->answered = true;
      if (ping_first_pong < 0) ping_first_pong = (int64_t)one_way;
      if (++pongs_seen == expected_pongs_locked()) {
        if (measured) {
          hist_record(&first_hist, (uint64_t)ping_first_pong);
          hist_record(&all_hist, one_way);
          if (cfg.count && ++measured_pings >= cfg.count) request_stop();
        }
        send = !stopping();
      }
    }
  }
  pthread_mutex_unlock(&m);
  if (send) send_ping();
}

// Data: loss accounting per writer and key, as ddsperf's.
static void one_data(const KeyedSeq *d, const dds_sample_info_t *info) {
  const uint32_t size = FIXED + d->baggage._length, n = cfg.nkeys, k = d->keyval, s = d->seq;
  pthread_mutex_lock(&m);
  if (k >= n) {
    emit("\"type\":\"key_out_of_range\",\"key\":%u,\"nkeys\":%u", k, n);
    exit_code = 3;
    request_stop();
    pthread_mutex_unlock(&m);
    return;
  }
  seq_state_t *st = NULL;
  for (int i = 0; i < nseqs && !st; i++)
    if (seqs[i].h == info->publication_handle) st = &seqs[i];
  if (!st && nseqs < MAX_HANDLES) {
    st = &seqs[nseqs++];
    st->h = info->publication_handle;
    st->expected = malloc(n * sizeof *st->expected);
    if (!st->expected) abort();
    for (uint32_t i = 0; i < n; i++) st->expected[i] = s + (i - k) + (i <= k ? n : 0);
  } else if (st) {
    lost += (uint32_t)(s - st->expected[k]);
    st->expected[k] = s + n;
  }
  if (st) st->received++;
  total++;
  bytes += size;
  last_size = size;
  pthread_mutex_unlock(&m);
}

static void on_ping_data(dds_entity_t r, void *arg) { (void)arg; take_all(r, one_ping); }
static void on_pong_data(dds_entity_t r, void *arg) { (void)arg; take_all(r, one_pong); }
static void on_data_data(dds_entity_t r, void *arg) { (void)arg; take_all(r, one_data); }

typedef struct {
  dds_entity_t reader;
  void (*f)(const KeyedSeq *, const dds_sample_info_t *);
  enum trigger trig;
} pump_t;

// A reader thread for the waitset and polling modes.
static void *pump_thread(void *a) {
  pump_t *p = a;
  dds_entity_t ws = 0;
  if (p->trig == T_WAITSET) {
    ws = dds_create_waitset(dp);
    dds_waitset_attach(ws, dds_create_readcondition(p->reader, DDS_ANY_STATE), 0);
  }
  while (!stopping()) {
    if (ws > 0 && dds_waitset_wait(ws, NULL, 0, DDS_MSECS(100)) <= 0) continue;
    take_all(p->reader, p->f);
    if (p->trig == T_POLLING) dds_sleepfor(DDS_MSECS(1));
  }
  return NULL;
}

static pthread_t pumps[3];
static pump_t pump_args[3];
static int npumps;

static dds_entity_t make_reader(dds_entity_t sub, dds_entity_t topic, const dds_qos_t *q,
                                void (*cb)(dds_entity_t, void *),
                                void (*f)(const KeyedSeq *, const dds_sample_info_t *), enum trigger trig) {
  dds_listener_t *l = NULL;
  if (trig == T_LISTENER) {
    l = dds_create_listener(NULL);
    dds_lset_data_available(l, cb);
  }
  dds_entity_t r = dds_create_reader(sub, topic, q, l);
  if (l) dds_delete_listener(l);
  if (r > 0 && trig != T_LISTENER) {
    pump_args[npumps] = (pump_t){r, f, trig};
    pthread_create(&pumps[npumps], NULL, pump_thread, &pump_args[npumps]);
    npumps++;
  }
  return r;
}

static dds_qos_t *endpoint_qos(bool data) {
  dds_qos_t *q = dds_create_qos();
  if (cfg.best_effort) dds_qset_reliability(q, DDS_RELIABILITY_BEST_EFFORT, 0);
  else dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(10));
  dds_qset_durability(q, DDS_DURABILITY_VOLATILE);
  if (data) {
    if (cfg.history == 0) dds_qset_history(q, DDS_HISTORY_KEEP_ALL, 1);
    else dds_qset_history(q, DDS_HISTORY_KEEP_LAST, cfg.history);
    dds_qset_resource_limits(q, 10000, DDS_LENGTH_UNLIMITED, DDS_LENGTH_UNLIMITED);
  } else {
    dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 1);
  }
  return q;
}

static bool create(void) {
  char ud[400];
  int udn = snprintf(ud, sizeof ud, "DDSPerf:%d:%d:%s", cfg.sub ? 1 : 0, g_pid, host);
  dds_qos_t *pq = dds_create_qos();
  dds_qset_userdata(pq, ud, (size_t)udn);
  dp = dds_create_participant(cfg.domain, pq, NULL);
  dds_delete_qos(pq);
  if (dp < 0) return false;
  dds_guid_t g;
  dds_get_guid(dp, &g);
  memcpy(self_prefix, g.v, 12);
  const char *rel = cfg.best_effort ? "U" : "R";
  char name[64];
  snprintf(name, sizeof name, "DDSPerf%sDataKS", rel);
  t_data = dds_create_topic(dp, &KeyedSeq_desc, name, NULL, NULL);
  snprintf(name, sizeof name, "DDSPerf%sPingKS", rel);
  t_ping = dds_create_topic(dp, &KeyedSeq_desc, name, NULL, NULL);
  snprintf(name, sizeof name, "DDSPerf%sPongKS", rel);
  t_pong = dds_create_topic(dp, &KeyedSeq_desc, name, NULL, NULL);
  pub_self = dds_create_publisher(dp, NULL, NULL);
  sub_self = dds_create_subscriber(dp, NULL, NULL);
  r_participants = dds_create_reader(dp, DDS_BUILTIN_TOPIC_DCPSPARTICIPANT, NULL, NULL);
  g_guard = dds_create_guardcondition(dp);
  if (t_data < 0 || t_ping < 0 || t_pong < 0 || pub_self < 0 || sub_self < 0 || r_participants < 0)
    return false;
  dds_qos_t *q1 = endpoint_qos(false), *qd = endpoint_qos(true);
  r_ping = make_reader(sub_self, t_ping, q1, on_ping_data, one_ping, cfg.pp_trigger);
  w_ping = dds_create_writer(pub_self, t_ping, q1, NULL);
  if (cfg.sub) r_data = make_reader(sub_self, t_data, qd, on_data_data, one_data, cfg.sub_trigger);
  w_data = dds_create_writer(pub_self, t_data, qd, NULL);
  char part[40];
  guid_partition(&g, part);
  dds_qos_t *sq = dds_create_qos();
  dds_qset_partition1(sq, part);
  dds_entity_t pong_sub = dds_create_subscriber(dp, sq, NULL);
  dds_delete_qos(sq);
  r_pong = pong_sub > 0 ? make_reader(pong_sub, t_pong, qd, on_pong_data, one_pong, cfg.pp_trigger) : -1;
  dds_delete_qos(q1);
  dds_delete_qos(qd);
  return r_ping > 0 && w_ping > 0 && w_data > 0 && r_pong > 0 && (!cfg.sub || r_data > 0);
}

// "DDSPerf:R:PID:HOST" → has_reader, pid, host; false for anything else.
static bool parse_userdata(const char *s, size_t n, bool *has_reader, uint64_t *pid, char *phost, size_t hn) {
  char buf[400];
  if (n < 8 || n >= sizeof buf || memcmp(s, "DDSPerf:", 8) != 0 || memchr(s, 0, n)) return false;
  memcpy(buf, s, n);
  buf[n] = 0;
  char *a = buf + 8, *b = strchr(a, ':'), *c = b ? strchr(b + 1, ':') : NULL;
  if (!c) return false;
  *b = *c = 0;
  uint64_t r;
  if (!parse_u64(a, &r) || !parse_u64(b + 1, pid)) return false;
  *has_reader = r != 0;
  snprintf(phost, hn, "%s", c + 1);
  return true;
}

// Participant discovery from the built-in topic; pong writers are made here, on the main thread.
static void poll_participants(void) {
  void *buf[16];
  dds_sample_info_t info[16];
  for (;;) {
    buf[0] = NULL;
    int n = dds_take(r_participants, buf, info, 16, 16);
    if (n <= 0) return;
    for (int i = 0; i < n; i++) {
      const dds_builtintopic_participant_t *s = buf[i];
      if (memcmp(s->key.v, self_prefix, 12) == 0) continue;
      pthread_mutex_lock(&m);
      int p = peer_by_prefix_locked(s->key.v);
      if (info[i].instance_state != DDS_IST_ALIVE) {
        if (p >= 0 && peers[p].present) {
          peers[p].present = false;
          char hb[320];
          emit("\"type\":\"participant\",\"pid\":%d,\"event\":\"gone\",\"host\":%s,\"t\":%.3f", g_pid,
               json_str(peers[p].name, hb, sizeof hb), since_start());
        }
        pthread_mutex_unlock(&m);
        continue;
      }
      void *ud = NULL;
      size_t udn = 0;
      bool has_reader;
      uint64_t pid;
      char phost[256];
      if (!info[i].valid_data || !dds_qget_userdata(s->qos, &ud, &udn) ||
          !parse_userdata(ud, udn, &has_reader, &pid, phost, sizeof phost) || (p >= 0 && peers[p].present) ||
          (p < 0 && npeers == MAX_PEERS)) {
        dds_free(ud);
        pthread_mutex_unlock(&m);
        continue;
      }
      dds_free(ud);
      if (p < 0) {
        p = npeers++;
        memset(&peers[p], 0, sizeof peers[p]);
        hist_init(&peers[p].run);
        memcpy(peers[p].prefix, s->key.v, 12);
      }
      peer_t *pe = &peers[p];
      snprintf(pe->name, sizeof pe->name, "%s:%" PRIu64, phost, pid);
      pe->has_reader = has_reader;
      pe->present = true;
      pe->guid = s->key;
      // A ping already on its way does not wait for this peer's answer.
      pe->answered = true;
      pongs_seen++;
      char hb[300];
      emit("\"type\":\"participant\",\"pid\":%d,\"event\":\"new\",\"host\":%s,\"peer_pid\":%" PRIu64
           ",\"self\":false,\"t\":%.3f",
           g_pid, json_str(phost, hb, sizeof hb), pid, since_start());
      const bool need_writer = pe->pong_writer == 0;
      pthread_mutex_unlock(&m);
      if (need_writer) {
        char part[40];
        guid_partition(&s->key, part);
        dds_qos_t *q = dds_create_qos();
        dds_qset_partition1(q, part);
        dds_entity_t pp = dds_create_publisher(dp, q, NULL);
        dds_delete_qos(q);
        dds_qos_t *wq = endpoint_qos(false);
        dds_entity_t w = pp > 0 ? dds_create_writer(pp, t_pong, wq, NULL) : -1;
        dds_delete_qos(wq);
        if (w < 0) {
          emit_error("dds", "cannot create a pong writer");
          continue;
        }
        pthread_mutex_lock(&m);
        peers[p].pong_writer = w;
        pthread_mutex_unlock(&m);
      }
    }
    dds_return_loan(r_participants, buf, n);
  }
}

// Whether `prefix` is among the participants of the endpoints matched by `e` (a reader's
// publications or a writer's subscriptions).
static bool matched_with(dds_entity_t e, bool is_reader, const uint8_t *prefix) {
  dds_instance_handle_t hs[64];
  int n = is_reader ? dds_get_matched_publications(e, hs, 64) : dds_get_matched_subscriptions(e, hs, 64);
  for (int i = 0; i < n && i < 64; i++) {
    dds_builtintopic_endpoint_t *ep =
        is_reader ? dds_get_matched_publication_data(e, hs[i]) : dds_get_matched_subscription_data(e, hs[i]);
    if (!ep) continue;
    bool same = memcmp(ep->participant_key.v, prefix, 12) == 0;
    dds_builtintopic_free_endpoint(ep);
    if (same) return true;
  }
  return false;
}

// ddsperf's match count: peers whose ping, pong and (where needed) data endpoints all matched
// ours, now or earlier (one that has left since still counts, as in ddsperf's check at exit).
static uint32_t matched_count(void) {
  uint32_t n = 0;
  for (int i = 0; i < npeers; i++) {
    pthread_mutex_lock(&m);
    peer_t pe = peers[i];
    pthread_mutex_unlock(&m);
    if (pe.counted) {
      n++;
      continue;
    }
    if (!pe.present || pe.pong_writer <= 0) continue;
    if (!matched_with(w_ping, false, pe.prefix) || !matched_with(r_ping, true, pe.prefix) ||
        !matched_with(r_pong, true, pe.prefix) || !matched_with(pe.pong_writer, false, pe.prefix))
      continue;
    if (pe.has_reader && !matched_with(w_data, false, pe.prefix)) continue;
    if (cfg.sub && !matched_with(r_data, true, pe.prefix)) continue;
    pthread_mutex_lock(&m);
    peers[i].counted = true;
    pthread_mutex_unlock(&m);
    n++;
  }
  return n;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

// The per-second lines: subscriber counts and each pong source's latency of the interval.
static void report(double t, double dt) {
  pthread_mutex_lock(&m);
  if (cfg.sub) {
    const uint64_t d = total - last_total, dl = lost - last_lost, db = bytes - last_bytes;
    if (d > 0 || cfg.sub_every_second)
      emit("\"type\":\"sub\",\"pid\":%d,\"t\":%.3f,\"size\":%u,\"total\":%" PRIu64 ",\"lost\":%" PRIu64
           ",\"delta\":%" PRIu64 ",\"delta_lost\":%" PRIu64 ",\"rate_ksps\":%.6f,\"rate_mbps\":%.6f",
           g_pid, t, last_size, total, lost, d, dl, (double)d / dt / 1e3, (double)db * 8 / dt / 1e6);
    last_total = total;
    last_lost = lost;
    last_bytes = bytes;
  }
  for (int i = 0; i < npeers; i++) {
    peer_t *pe = &peers[i];
    size_t n = pe->interval_n;
    if (!n) continue;
    uint64_t *v = pe->interval;
    qsort(v, n, sizeof *v, cmp_u64);
    double sum = 0;
    for (size_t j = 0; j < n; j++) sum += (double)v[j];
#define PCT(q) ((double)v[(size_t)((q) * (double)n) < n ? (size_t)((q) * (double)n) : n - 1] / 1e3)
    char nb[320];
    emit("\"type\":\"latency\",\"pid\":%d,\"t\":%.3f,\"peer\":%s,\"size\":%u,\"cnt\":%zu,\"mean_us\":%.3f,"
         "\"min_us\":%.3f,\"p50_us\":%.3f,\"p90_us\":%.3f,\"p99_us\":%.3f,\"max_us\":%.3f",
         g_pid, t, json_str(pe->name, nb, sizeof nb), cfg.ping_size, n, sum / (double)n / 1e3,
         (double)v[0] / 1e3, PCT(0.5), PCT(0.9), PCT(0.99), (double)v[n - 1] / 1e3);
#undef PCT
    pe->interval_n = 0;
  }
  pthread_mutex_unlock(&m);
}

static void summary(void) {
  strbuf_t sb = {0};
  pthread_mutex_lock(&m);
  sb_printf(&sb, "\"type\":\"summary\",\"pid\":%d,\"latency\":[", g_pid);
  bool first = true;
  for (int i = 0; i < npeers; i++) {
    if (!peers[i].total) continue;
    char nb[320];
    sb_printf(&sb, "%s{\"peer\":%s,", first ? "" : ",", json_str(peers[i].name, nb, sizeof nb));
    sb_hist(&sb, &peers[i].run);
    sb_printf(&sb, "}");
    first = false;
  }
  sb_printf(&sb, "]");
  if (cfg.ping) {
    sb_printf(&sb, ",\"pings\":%" PRIu64 ",\"first\":{", first_hist.n);
    sb_hist(&sb, &first_hist);
    sb_printf(&sb, "},\"all\":{");
    sb_hist(&sb, &all_hist);
    sb_printf(&sb, "}");
  }
  sb_printf(&sb, ",\"received\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"exit_code\":%d,\"t\":%.3f", total, lost,
            exit_code, since_start());
  pthread_mutex_unlock(&m);
  emit("%s", sb.s);
  free(sb.s);
}

static void check_criteria(void) {
  uint32_t matched = matched_count();
  if (matched < cfg.minmatch) {
    char b[64];
    snprintf(b, sizeof b, "too few matching participants (%u)", matched);
    emit_error("too_few_matching", b);
    exit_code = 1;
  }
  pthread_mutex_lock(&m);
  bool few_rt = false, few_samples = false;
  for (int i = 0; i < npeers; i++) few_rt |= cfg.q_roundtrips && peers[i].total && peers[i].total < cfg.q_roundtrips;
  for (int i = 0; i < nseqs; i++) few_samples |= cfg.q_samples && seqs[i].received < cfg.q_samples;
  if (cfg.count && cfg.ping && measured_pings < cfg.count) {
    char b[96];
    snprintf(b, sizeof b, "%" PRIu64 " of --count %" PRIu64 " round trips before -D", measured_pings, cfg.count);
    pthread_mutex_unlock(&m);
    emit_error("too_few_roundtrips", b);
    pthread_mutex_lock(&m);
    exit_code = 1;
  }
  pthread_mutex_unlock(&m);
  if (few_rt) {
    emit_error("too_few_roundtrips", "too few roundtrips for some peers");
    exit_code = 1;
  }
  if (few_samples) {
    emit_error("too_few_samples", "too few samples for some peers");
    exit_code = 1;
  }
}

static void *publish_thread(void *a) {
  (void)a;
  KeyedSeq s = {0};
  s.baggage._length = s.baggage._maximum = cfg.pub_size - FIXED;
  s.baggage._buffer = s.baggage._length ? malloc(s.baggage._length) : NULL;
  if (s.baggage._length) memset(s.baggage._buffer, 0xEE, s.baggage._length);
  const int64_t start = mono_ns();
  uint64_t written = 0;
  int64_t ts = 0;
  while (!stopping()) {
    // Even source timestamps (no reader takes a data sample for a ping request), a multiple of
    // 2^-8 s so that the RTPS fraction holds them exactly.
    if (written % 64 == 0) ts = wall_ns() / 3906250 * 3906250;
    dds_return_t rc = dds_write_ts(w_data, &s, ts);
    if (rc == DDS_RETCODE_TIMEOUT) {
      emit("\"type\":\"write_error\",\"code\":%d", (int)rc);
      continue;
    } else if (rc != DDS_RETCODE_OK) {
      emit("\"type\":\"write_error\",\"code\":%d", (int)rc);
      exit_code = 2;
      request_stop();
      break;
    }
    ++written;
    ++s.seq;
    s.keyval = (s.keyval + 1) % cfg.nkeys;
    if (cfg.pub_rate > 0 && cfg.burst > 0 && written % cfg.burst == 0) {
      while (!stopping()) {
        double el = (double)(mono_ns() - start) / 1e9;
        if ((double)(written / cfg.burst) / (el + 0.005) <= cfg.pub_rate) break;
        dds_sleepfor(DDS_MSECS(1));
      }
    }
  }
  free(s.baggage._buffer);
  return NULL;
}

static void *signal_thread(void *a) {
  sigset_t *set = a;
  int sig;
  sigwait(set, &sig);
  request_stop();
  return NULL;
}

int main(int argc, char **argv) {
  g_pid = (int)getpid();
  g_t0 = mono_ns();
  cfg = parse_args(argc, argv);
  if (gethostname(host, sizeof host - 1) != 0) strcpy(host, "?");
  // SIGINT/SIGTERM/SIGHUP end the run cleanly: blocked everywhere (Cyclone's threads inherit the
  // mask) and taken by one thread with sigwait.
  static sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  pthread_t sig_thread;
  pthread_create(&sig_thread, NULL, signal_thread, &sigs);
  pthread_detach(sig_thread);
  hist_init(&first_hist);
  hist_init(&all_hist);
  char hb[300];
  emit("\"type\":\"participant\",\"pid\":%d,\"event\":\"new\",\"host\":%s,\"peer_pid\":%d,\"self\":true,"
       "\"t\":%.3f",
       g_pid, json_str(host, hb, sizeof hb), g_pid, since_start());
  ping_sample.baggage._length = ping_sample.baggage._maximum = cfg.ping_size - FIXED;
  ping_sample.baggage._buffer = calloc(1, cfg.ping_size - FIXED + 1);
  if (!create()) {
    fprintf(stderr, "cyclone-perf: creating the DDS entities failed\n");
    return 2;
  }
  dds_entity_t ws = dds_create_waitset(dp);
  dds_waitset_attach(ws, dds_create_readcondition(r_participants, DDS_ANY_STATE), 0);
  dds_waitset_attach(ws, g_guard, 1);
  if (cfg.initwait_s >= 0) {
    const int64_t until = mono_ns() + (int64_t)(cfg.initwait_s * 1e9);
    while (!stopping() && mono_ns() < until) {
      poll_participants();
      if (matched_count() >= cfg.minmatch) break;
      dds_waitset_wait(ws, NULL, 0, DDS_MSECS(100));
    }
    if (matched_count() < cfg.minmatch) {
      emit_error("too_few_matching", "too few matching participants");
      exit_code = 1;
      summary();
      dds_delete(dp);
      return 1;
    }
    dds_sleepfor(DDS_MSECS(100));
  }
  // The run starts now: report times count from here, like ddsperf's tstart.
  g_t0 = mono_ns();
  pthread_t publisher;
  if (cfg.pub) pthread_create(&publisher, NULL, publish_thread, NULL);
  if (cfg.ping) {
    pthread_mutex_lock(&m);
    pinging = true;
    pthread_mutex_unlock(&m);
    send_ping();
  }
  const int64_t end = cfg.duration_s > 0 ? g_t0 + (int64_t)(cfg.duration_s * 1e9) : INT64_MAX;
  int64_t next = g_t0 + 1000000000, prev = g_t0;
  while (!stopping()) {
    poll_participants();
    const int64_t now = mono_ns();
    if (now >= next) {
      // ddsperf prints the report due at the end instant (-D 3: 1.000 … 3.000).
      report((double)(next - g_t0) / 1e9, (double)(now - prev) / 1e9);
      prev = now;
      const bool last = next >= end;
      next += 1000000000;
      if (now - next > 500000000) next = now + 1000000000;
      if (last) break;
    } else if (now >= end) {
      break;  // a fractional -D ends between reports
    }
    int64_t until = next < end ? next : end;
    if (cfg.ping) {
      pthread_mutex_lock(&m);
      const int64_t watchdog = last_ping_mono + 1000000000;
      pthread_mutex_unlock(&m);
      if (now >= watchdog) {
        send_ping();  // a lost ping or pong never stalls the run
        continue;
      }
      if (watchdog < until) until = watchdog;
    }
    dds_waitset_wait(ws, NULL, 0, until - now);
  }
  request_stop();
  // A count-mode run ends between reports: the partial interval's lines, so that what the
  // per-second lines cover is the whole run.
  if (cfg.count) {
    const int64_t now = mono_ns();
    if (now > prev) report((double)(now - g_t0) / 1e9, (double)(now - prev) / 1e9);
  }
  if (cfg.pub) pthread_join(publisher, NULL);
  for (int i = 0; i < npumps; i++) pthread_join(pumps[i], NULL);
  check_criteria();
  summary();
  dds_delete(dp);
  return exit_code;
}
