// The load-engine bench's fast loopback target: the same responses as target.js from one epoll
// loop in C, so that a client core, not the target, is what saturates. One Node core serves about
// 300-400 64-token streams/s here; this serves several thousand.
//   POST {"stream": false} -> the small chat.completion JSON (content-length)
//   POST {"stream": true}  -> TOKENS content chunks GAP_MS apart (chunked), finish, usage, [DONE]
// Build: cc -O2 -o c-target c-target.c   Usage: ./c-target PORT [TOKENS=64] [GAP_MS=1]
// Prints "target on PORT" when listening. GET /stats: how late its token writes were against their
// schedule (reset on read). Bench use only: no TLS, no pipelining limits.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define IN_CAP 65536

typedef struct conn {
  int fd;
  size_t inlen;
  char in[IN_CAP];
  char *out;
  size_t outlen, outcap;
  int streaming, next_token;
  double due_ms;
  struct conn *prev, *next; /* the streaming list, in due order (one gap for all streams) */
} conn;

static int tokens = 64;
static double gap_ms = 1;
static int epfd;
static conn *head, *tail_;
static char json_resp[1024];
static size_t json_resp_len;
static char **token_chunks; /* each already framed as one HTTP chunk */
static size_t *token_chunk_lens;
static char end_chunks[2048];
static size_t end_chunks_len;
/* How late token writes were against their due time (the target's own schedule fidelity), in
   buckets of [0,0.1) [0.1,0.25) [0.25,0.5) [0.5,1) [1,2) [2,5) [5,10) [10,inf) ms; GET /stats
   returns them as JSON and resets them. */
static const double late_bounds[] = {0.1, 0.25, 0.5, 1, 2, 5, 10};
static long late_counts[8];
static double late_max;
static const char stream_head[] =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void close_conn(conn *c);

static int flush_out(conn *c) {
  while (c->outlen > 0) {
    ssize_t n = write(c->fd, c->out, c->outlen);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
        epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
        return 0;
      }
      close_conn(c);
      return -1;
    }
    memmove(c->out, c->out + n, c->outlen - (size_t)n);
    c->outlen -= (size_t)n;
  }
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
  epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
  return 0;
}

/* Queues bytes and tries to write them at once: one write syscall per call, as a server that
   sends each chunk when it is made. */
static int send_bytes(conn *c, const char *p, size_t n) {
  if (c->outlen + n > c->outcap) {
    c->outcap = (c->outlen + n) * 2;
    c->out = realloc(c->out, c->outcap);
    if (!c->out) abort();
  }
  memcpy(c->out + c->outlen, p, n);
  c->outlen += n;
  return flush_out(c);
}

static void unlink_stream(conn *c) {
  if (!c->streaming) return;
  if (c->prev) c->prev->next = c->next; else head = c->next;
  if (c->next) c->next->prev = c->prev; else tail_ = c->prev;
  c->prev = c->next = NULL;
  c->streaming = 0;
}

static void append_stream(conn *c) {
  c->streaming = 1;
  c->prev = tail_;
  c->next = NULL;
  if (tail_) tail_->next = c; else head = c;
  tail_ = c;
}

static void close_conn(conn *c) {
  unlink_stream(c);
  epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  free(c->out);
  free(c);
}

/* Writes token c->next_token (or the end); returns -1 when the connection was closed. */
static int stream_step(conn *c) {
  if (c->next_token < tokens) {
    int i = c->next_token++;
    return send_bytes(c, token_chunks[i], token_chunk_lens[i]);
  }
  unlink_stream(c);
  return send_bytes(c, end_chunks, end_chunks_len);
}

static size_t header_value(const char *headers, size_t len, const char *name) {
  size_t nlen = strlen(name);
  for (size_t i = 0; i + nlen < len; i++) {
    if ((i == 0 || headers[i - 1] == '\n') && strncasecmp(headers + i, name, nlen) == 0)
      return (size_t)strtoul(headers + i + nlen, NULL, 10);
  }
  return 0;
}

static void on_readable(conn *c) {
  for (;;) {
    if (c->inlen == IN_CAP) { close_conn(c); return; }
    ssize_t n = read(c->fd, c->in + c->inlen, IN_CAP - c->inlen);
    if (n == 0) { close_conn(c); return; }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      close_conn(c);
      return;
    }
    c->inlen += (size_t)n;
  }
  for (;;) {
    char *end = memmem(c->in, c->inlen, "\r\n\r\n", 4);
    if (!end) return;
    size_t head_len = (size_t)(end - c->in) + 4;
    size_t body_len = header_value(c->in, head_len, "content-length:");
    if (c->inlen < head_len + body_len) return;
    int stats = strncmp(c->in, "GET /stats", 10) == 0;
    int stream = memmem(c->in + head_len, body_len, "\"stream\":true", 13) != NULL;
    memmove(c->in, c->in + head_len + body_len, c->inlen - head_len - body_len);
    c->inlen -= head_len + body_len;
    if (stats) {
      char body[512], resp[768];
      int n = sprintf(body, "{\"lateMsBuckets\":[\"<0.1\",\"<0.25\",\"<0.5\",\"<1\",\"<2\",\"<5\",\"<10\",\">=10\"],"
                            "\"counts\":[%ld,%ld,%ld,%ld,%ld,%ld,%ld,%ld],\"maxLateMs\":%.3f}",
                      late_counts[0], late_counts[1], late_counts[2], late_counts[3], late_counts[4],
                      late_counts[5], late_counts[6], late_counts[7], late_max);
      int m = sprintf(resp, "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s", n, body);
      memset(late_counts, 0, sizeof late_counts);
      late_max = 0;
      if (send_bytes(c, resp, (size_t)m) < 0) return;
      continue;
    }
    if (!stream) {
      if (send_bytes(c, json_resp, json_resp_len) < 0) return;
      continue;
    }
    if (send_bytes(c, stream_head, sizeof stream_head - 1) < 0) return;
    c->next_token = 0;
    if (gap_ms <= 0) {
      for (;;) {
        int last = c->next_token == tokens;
        if (stream_step(c) < 0) return;
        if (last) break;
      }
      continue;
    }
    if (stream_step(c) < 0) return; /* the first token at once, the rest gap_ms apart */
    c->due_ms = now_ms() + gap_ms;
    append_stream(c);
  }
}

static void frame(const char *data, char *dst, size_t *len) {
  size_t n = strlen(data);
  *len = (size_t)sprintf(dst, "%zx\r\n%s\r\n", n, data);
}

int main(int argc, char **argv) {
  int port = argc > 1 ? atoi(argv[1]) : 8089;
  if (argc > 2) tokens = atoi(argv[2]);
  if (argc > 3) gap_ms = atof(argv[3]);
  signal(SIGPIPE, SIG_IGN);

  const char *json =
      "{\"id\":\"c1\",\"object\":\"chat.completion\",\"model\":\"bench\",\"choices\":[{\"index\":0,\"message\":"
      "{\"role\":\"assistant\",\"content\":\"hello there\"},\"finish_reason\":\"stop\"}],\"usage\":"
      "{\"prompt_tokens\":5,\"completion_tokens\":2,\"total_tokens\":7}}";
  json_resp_len = (size_t)sprintf(json_resp,
                                  "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %zu\r\n\r\n%s",
                                  strlen(json), json);
  token_chunks = calloc((size_t)tokens, sizeof *token_chunks);
  token_chunk_lens = calloc((size_t)tokens, sizeof *token_chunk_lens);
  for (int i = 0; i < tokens; i++) {
    char data[512];
    sprintf(data,
            "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"bench\",\"choices\":[{\"index\":0,"
            "\"delta\":{\"content\":\" w%d\"},\"finish_reason\":null}]}\n\n",
            i);
    token_chunks[i] = malloc(600);
    frame(data, token_chunks[i], &token_chunk_lens[i]);
  }
  char tail_data[1024];
  sprintf(tail_data,
          "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"bench\",\"choices\":[{\"index\":0,"
          "\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_"
          "tokens\":5,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n",
          tokens, tokens + 5);
  frame(tail_data, end_chunks, &end_chunks_len);
  memcpy(end_chunks + end_chunks_len, "0\r\n\r\n", 5);
  end_chunks_len += 5;

  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 4096) < 0) {
    perror("listen");
    return 1;
  }
  epfd = epoll_create1(0);
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &lev);
  printf("target on %d\n", port);
  fflush(stdout);

  /* The next token due wakes the loop through a timerfd (absolute CLOCK_MONOTONIC, sub-ms), so
     the target neither spins nor rounds gaps to epoll's whole milliseconds. */
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  static int timer_tag;
  struct epoll_event tev = {.events = EPOLLIN, .data.ptr = &timer_tag};
  epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &tev);
  double armed_for = -1;

  struct epoll_event events[256];
  for (;;) {
    if (head && head->due_ms != armed_for) {
      struct itimerspec at = {0};
      double due = head->due_ms;
      at.it_value.tv_sec = (time_t)(due / 1e3);
      at.it_value.tv_nsec = (long)((due - at.it_value.tv_sec * 1e3) * 1e6);
      if (at.it_value.tv_sec == 0 && at.it_value.tv_nsec == 0) at.it_value.tv_nsec = 1;
      timerfd_settime(tfd, TFD_TIMER_ABSTIME, &at, NULL);
      armed_for = due;
    }
    int n = epoll_wait(epfd, events, 256, -1);
    for (int i = 0; i < n; i++) {
      conn *c = events[i].data.ptr;
      if (c == (conn *)&timer_tag) {
        uint64_t expirations;
        if (read(tfd, &expirations, sizeof expirations) < 0) { /* spurious: nothing to do */ }
        armed_for = -1;
        continue;
      }
      if (c == NULL) {
        for (;;) {
          int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
          if (fd < 0) break;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          conn *nc = calloc(1, sizeof *nc);
          nc->fd = fd;
          struct epoll_event ev = {.events = EPOLLIN, .data.ptr = nc};
          epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
        }
        continue;
      }
      if (events[i].events & (EPOLLERR | EPOLLHUP)) { close_conn(c); continue; }
      if (events[i].events & EPOLLOUT) { if (flush_out(c) < 0) continue; }
      if (events[i].events & EPOLLIN) on_readable(c);
    }
    double now = now_ms();
    while (head && head->due_ms <= now) {
      conn *c = head;
      double late = now_ms() - c->due_ms;
      int b = 0;
      while (b < 7 && late >= late_bounds[b]) b++;
      late_counts[b]++;
      if (late > late_max) late_max = late;
      unlink_stream(c);
      if (c->next_token < tokens) {
        if (stream_step(c) < 0) continue;
        c->due_ms += gap_ms;
        append_stream(c);
      } else {
        stream_step(c);
      }
    }
  }
}
