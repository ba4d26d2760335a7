/* runcapture.c - a capture of one interface that lives as long as a
 * topology and writes one pcap per run: started once, told on stdin where
 * each run's packets go ("open PATH", "close"), so that no run pays for a
 * capture's start (a few hundred ms inside the pinned kernel: the ring's
 * pages) or its stop.  With --headers and --keep it writes the packets a
 * filter names whole and every other one cut after its headers, in one
 * pass.  --read cuts a pcap already written the same way.  See
 * ftp-impl/PROGRAMS.md. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "capfile.h"
#include "capopts.h"
#include "capsource.h"
#include "str.h"
#include "sysutil.h"

#define LINE_MAX_BYTES 4096

static volatile sig_atomic_t stopping;

static void on_stop(int sig) {
  (void)sig;
  stopping = 1;
}

/* One answer line: a word, then what it is about. */
static void answer(const char *word, const char *detail) {
  printf("%s %s\n", word, detail);
  if (fflush(stdout) != 0) {
    stopping = 1; /* nobody reads the answers any more */
  }
}

static void close_file(struct capfile *f, int drain_limit_ms) {
  struct capcounts c;
  char err[PCAP_ERRBUF_SIZE + 64];
  char line[256];
  if (capfile_close(f, drain_limit_ms, &c, err, sizeof err) != 0) {
    answer("error", err);
    return;
  }
  (void)str_fmt(line, sizeof line,
                "captured=%llu received=%llu dropped=%llu drain_ms=%d",
                (unsigned long long)c.captured, (unsigned long long)c.received,
                (unsigned long long)c.dropped, c.drain_ms);
  answer("closed", line);
}

/* One command line; 1 once it says to quit. */
static int command(struct capfile *f, const struct capopts *o, char *line) {
  char err[PCAP_ERRBUF_SIZE + 64];
  if (strncmp(line, "open ", 5) == 0 && line[5] != '\0') {
    if (capfile_open(f, line + 5, err, sizeof err) != 0) {
      answer("error", err);
    } else {
      answer("opened", line + 5);
    }
  } else if (strcmp(line, "close") == 0) {
    close_file(f, o->drain_limit_ms);
  } else if (strcmp(line, "quit") == 0) {
    return 1;
  } else {
    (void)str_fmt(err, sizeof err, "unknown command: %.100s", line);
    answer("error", err);
  }
  return 0;
}

struct lines {
  char buf[LINE_MAX_BYTES];
  size_t len;
  int overlong; /* the line being read did not fit: skip to its end */
};

/* Read what stdin has and run each whole line; 1 at its end or "quit". */
static int read_commands(struct lines *in, struct capfile *f,
                         const struct capopts *o) {
  ssize_t n = read(STDIN_FILENO, in->buf + in->len, sizeof in->buf - in->len);
  if (n <= 0) {
    return n == 0 || errno != EINTR;
  }
  in->len += (size_t)n;
  char *nl;
  while ((nl = memchr(in->buf, '\n', in->len)) != NULL) {
    *nl = '\0';
    int quit = in->overlong ? 0 : command(f, o, in->buf);
    if (in->overlong) {
      answer("error", "command longer than 4096 bytes");
      in->overlong = 0;
    }
    size_t used = (size_t)(nl - in->buf) + 1;
    memmove(in->buf, nl + 1, in->len - used);
    in->len -= used;
    if (quit) {
      return 1;
    }
  }
  if (in->len == sizeof in->buf) {
    in->overlong = 1;
    in->len = 0;
  }
  return 0;
}

static int serve(pcap_t *p, const struct capopts *o) {
  char err[PCAP_ERRBUF_SIZE];
  struct capfile f;
  static struct lines in;
  int quit = 0;
  if (pcap_setnonblock(p, 1, err) != 0) {
    fprintf(stderr, "runcapture: %s\n", err);
    return 1;
  }
  capfile_init(&f, p, o->immediate);
  struct pollfd fds[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
                          {.fd = pcap_get_selectable_fd(p), .events = POLLIN}};
  answer("listening on", o->iface);
  while (!quit && !stopping) {
    /* a bounded wait: in block mode a block may retire without a wake-up */
    if (poll(fds, 2, 1000) < 0 && errno != EINTR) {
      fprintf(stderr, "runcapture: poll: %s\n", strerror(errno));
      break;
    }
    if (capfile_read_ring(&f) != 0) {
      fprintf(stderr, "runcapture: %s\n", pcap_geterr(p));
      break;
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      quit = read_commands(&in, &f, o);
    }
  }
  if (f.out != NULL) {
    close_file(&f, stopping ? 0 : o->drain_limit_ms);
  }
  return quit || stopping ? 0 : 1;
}

/* --read: the file's packets through the same program, cut alike. */
static int cut_file(pcap_t *p, const struct bpf_program *prog,
                    const char *out_path) {
  struct pcap_pkthdr *h;
  const unsigned char *bytes;
  int status;
  pcap_dumper_t *out = pcap_dump_open(p, out_path);
  if (out == NULL) {
    fprintf(stderr, "runcapture: %s\n", pcap_geterr(p));
    return 1;
  }
  while ((status = pcap_next_ex(p, &h, &bytes)) == 1) {
    struct pcap_pkthdr cut = *h;
    unsigned keep = (unsigned)pcap_offline_filter(prog, h, bytes);
    if (keep < cut.caplen) {
      cut.caplen = keep;
    }
    pcap_dump((unsigned char *)out, &cut, bytes);
  }
  if (status != PCAP_ERROR_BREAK) {
    fprintf(stderr, "runcapture: %s\n", pcap_geterr(p));
  }
  int flushed = pcap_dump_flush(out);
  pcap_dump_close(out);
  return status == PCAP_ERROR_BREAK && flushed == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  struct capopts o;
  struct bpf_program prog;
  struct sigaction sa;
  sys_set_progname("runcapture");
  capopts_parse(argc, argv, &o);
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0) {
    die("sigaction: %s", strerror(errno));
  }
  sys_ignore_sigpipe();
  pcap_t *p = capsource_open(&o, &prog);
  if (p == NULL) {
    return 1;
  }
  int status = o.read != NULL ? cut_file(p, &prog, o.write) : serve(p, &o);
  pcap_freecode(&prog);
  pcap_close(p);
  return status;
}
